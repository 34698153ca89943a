#include "passes/statement_sequence.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "passes/lower/abi_params.h"
#include "passes/lower/level_access.h"
#include "passes/lower_to_loops.h"
#include "support/text.h"

namespace spgen {

using namespace loops;

namespace {

// Copies axes from the statements' programs into the whole one, each once (by name), each sized
// by its variable's class (sparse::Program::size_var).
class AxisCopier {
 public:
  explicit AxisCopier(sparse::Program& whole) : whole_(whole) {}
  int copy(const sparse::Program& from, int id) {
    const sparse::Axis& axis = from.axes.at(static_cast<size_t>(id));
    if (auto known = ids_.find(axis.name); known != ids_.end()) return known->second;
    sparse::Axis copied = axis;
    copied.parent = axis.parent >= 0 ? copy(from, axis.parent) : -1;
    if (axis.length.rfind("dim_", 0) == 0) copied.length = lowering::dim_name(whole_.size_var(axis.length.substr(4)));
    whole_.axes.push_back(copied);
    return ids_[axis.name] = static_cast<int>(whole_.axes.size()) - 1;
  }

 private:
  sparse::Program& whole_;
  std::map<std::string, int> ids_;
};

}  // namespace

sparse::Program statement_sequence_program(const std::string& name, const StatementKernels& kernels) {
  sparse::Program whole;
  whole.kernel_name = name;
  whole.spec_text = join(kernels.texts, "; ");
  whole.value_type = kernels.programs.front().value_type;
  whole.index_type = kernels.programs.front().index_type;
  whole.index_vars = kernels.tensors.index_vars;
  whole.index_class = kernels.tensors.index_class;
  AxisCopier axes(whole);
  auto copied = [&](const sparse::Program& from, const std::string& tensor, bool is_output) {
    sparse::SparseBuffer buffer = from.buffer(tensor);
    for (int& id : buffer.axes) id = axes.copy(from, id);
    buffer.is_output = is_output;
    buffer.previous_output = false;
    if (auto root = kernels.structure_root.find(tensor); root != kernels.structure_root.end()) buffer.shares_structure_with = root->second;
    return buffer;
  };
  // Inputs first, so that an output's structure root is there when it takes its axes; then the
  // outputs go before them.
  std::vector<sparse::SparseBuffer> inputs, outputs;
  for (const ast::TensorUse& use : kernels.tensors.tensors)
    if (!use.is_output) inputs.push_back(copied(kernels.programs.at(kernels.tensors.readers.at(use.name).front()), use.name, false));
  whole.buffers = inputs;
  for (size_t k = 0; k < kernels.programs.size(); ++k) {
    const std::string& tensor = kernels.programs[k].output().tensor;
    const bool seen = std::any_of(outputs.begin(), outputs.end(), [&](const sparse::SparseBuffer& b) { return b.tensor == tensor; });
    if (kernels.temporaries.count(tensor) || seen) continue;  // (a later statement's `+=` into it: once)
    sparse::SparseBuffer buffer = copied(kernels.programs[k], tensor, true);
    if (!buffer.shares_structure_with.empty()) buffer.axes = whole.buffer(buffer.shares_structure_with).axes;
    outputs.push_back(std::move(buffer));
  }
  whole.buffers = outputs;
  whole.buffers.insert(whole.buffers.end(), inputs.begin(), inputs.end());
  if (const ast::Spec* abi = kernels.abi_order) {
    whole.index_vars = abi->index_vars;
    auto rank = [&](const sparse::SparseBuffer& b) {
      return std::find_if(abi->tensors.begin(), abi->tensors.end(), [&](const ast::TensorUse& t) { return t.name == b.tensor; }) - abi->tensors.begin();
    };
    std::stable_sort(whole.buffers.begin(), whole.buffers.end(), [&](const sparse::SparseBuffer& a, const sparse::SparseBuffer& b) { return rank(a) < rank(b); });
  }
  return whole;
}

LoweredFunc build_statement_executor(const std::string& name, const sparse::Program& whole, const StatementKernels& kernels) {
  const ScalarType index_type = index_scalar_type(whole.index_type);
  const ScalarType value_type = value_scalar_type(whole.value_type);
  LoweredFunc executor;
  executor.name = name;
  const std::set<int> no_runs;
  executor.params = lowering::kernel_params({whole, false, false, -1, false, no_runs});

  // A temporary's values: one per coordinate (dense), or per stored entry of its structure root;
  // none where no kernel takes them (fused statements that hold it a row at a time).
  std::set<std::string> taken;
  for (const LoweredFunc& func : kernels.funcs)
    for (const Param& p : func.params) taken.insert(p.name);
  std::vector<Workspace> temporaries;
  for (const sparse::Program& program : kernels.programs) {
    const sparse::SparseBuffer& output = program.output();
    const bool allocated = std::any_of(temporaries.begin(), temporaries.end(), [&](const Workspace& w) { return w.name == output.values; });
    if (!kernels.temporaries.count(output.tensor) || !taken.count(output.values) || allocated) continue;  // (`+=` into it: once)
    Expr size;
    if (auto root = kernels.structure_root.find(output.tensor); root != kernels.structure_root.end()) {
      size = int64(1);
      for (int id : whole.buffer(root->second).axes) size = lowering::level_access(whole.axes.at(static_cast<size_t>(id)))->size(size, index_type);
    } else {
      for (const std::string& var : output.indices) {
        Expr dim = loops::var(lowering::dim_name(whole.size_var(var)));
        size = size ? mul(size, dim) : dim;
      }
      if (!size) size = int64(1);  // a scalar
    }
    // (Uninitialised: its statement overwrites it whole, as a kernel overwrites an output with `=`.)
    temporaries.push_back({output.values, value_type, size, nullptr});
  }

  // Each statement's parameters from the executor's: a temporary's values from its workspace,
  // the pos and crd arrays of a tensor with another's structure from that root's.
  std::vector<Stmt> calls;
  for (size_t k = 0; k < kernels.funcs.size(); ++k) {
    const LoweredFunc& func = kernels.funcs[k];
    std::vector<Expr> args;
    for (const Param& p : func.params) {
      if (p.kind == ParamKind::Dim) {
        args.push_back(loops::var(lowering::dim_name(whole.size_var(p.index_var))));
        continue;
      }
      auto root = kernels.structure_root.find(p.tensor);
      if ((p.kind == ParamKind::Pos || p.kind == ParamKind::Crd) && root != kernels.structure_root.end()) {
        const sparse::SparseBuffer& structure = whole.buffer(root->second);
        const sparse::Axis& axis = whole.axes.at(static_cast<size_t>(structure.axes.at(static_cast<size_t>(p.level))));
        args.push_back(loops::var(p.kind == ParamKind::Pos ? axis.pos : axis.crd));
        continue;
      }
      args.push_back(loops::var(p.name));
    }
    calls.push_back(std::make_shared<Comment>(kernels.comments[k]));
    calls.push_back(std::make_shared<Call>(func.name, std::move(args)));
  }
  executor.body = temporaries.empty() ? block(std::move(calls)) : std::make_shared<Allocate>(std::move(temporaries), block(std::move(calls)));
  return executor;
}

}  // namespace spgen
