#include "codegen/cuda_backend.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "codegen/abi_header.h"
#include "codegen/c_printer.h"
#include "passes/split_gpu_kernels.h"
#include "ir/loop_ir_visitor.h"
#include "support/templates.h"

namespace spgen {

using namespace loops;

namespace {

constexpr const char* kMaxGridX = "2147483647";
constexpr const char* kMaxGridY = "65535";

class CudaExprPrinter : public CExprPrinter {
 protected:
  std::string print_min_max(BinOp op, const std::string& a, const std::string& b, ScalarType type) const override {
    return std::string(op == BinOp::Min ? "spgen_min<" : "spgen_max<") + type_name(type) + ">(" + a + ", " + b + ")";
  }
  // CUDA's math functions by their C names: the float ones end in f.
  std::string print_math(MathOp op, const std::string& a, ScalarType type) const override {
    return std::string(c_math_function(op)) + (type == ScalarType::Float32 ? "f(" : "(") + a + ")";
  }
};

// CUDA's built-in indices, as IR variables so that the printer places parentheses.
Expr builtin(const std::string& name) { return var(name, ScalarType::Int32); }

// The first iteration a thread takes, and the stride to its next, on the loop's GPU index.
Expr thread_index(const LoopAnnotations& a) {
  if (a.bind == "grid") return add(mul(cast(ScalarType::Int64, builtin("blockIdx.x")), builtin("blockDim.x")), builtin("threadIdx.x"));
  if (a.bind == "block") return add(mul(cast(ScalarType::Int64, builtin("threadIdx.y")), builtin("blockDim.x")), builtin("threadIdx.x"));
  return cast(ScalarType::Int64, builtin(a.bind == "warp" ? "threadIdx.x" : a.bind));
}
Expr thread_stride(const LoopAnnotations& a) {
  if (a.bind == "grid") return mul(cast(ScalarType::Int64, builtin("gridDim.x")), builtin("blockDim.x"));
  if (a.bind == "block") return mul(cast(ScalarType::Int64, builtin("blockDim.x")), builtin("blockDim.y"));
  if (a.bind == "blockIdx.x") return builtin("gridDim.x");
  if (a.bind == "blockIdx.y") return builtin("gridDim.y");
  return int64(a.bind_threads);
}

// Where each shared-memory workspace of a kernel lies in its dynamic shared memory, in the
// order they appear: one after another, each starting on 16 bytes (any element type, and vector
// loads, are aligned there).
struct SharedLayout {
  std::map<std::string, Expr> offset;  // workspace name → byte offset
  Expr bytes = int64(0);               // the launch's dynamic shared memory
};

SharedLayout shared_layout(const std::vector<Stmt>& body) {
  struct Collect : IRVisitor {
    SharedLayout layout;
    void visit_allocate(const Allocate& node) override {
      for (const Workspace& w : node.buffers) {
        if (!w.shared) continue;
        layout.offset[w.name] = layout.bytes;
        Expr bytes = mul(w.size, int64(w.type == ScalarType::Float64 || w.type == ScalarType::Int64 ? 8 : 4));
        Expr aligned = mul(binary(BinOp::Div, add(bytes, int64(15)), int64(16)), int64(16));
        layout.bytes = is_const_int(layout.bytes, 0) ? aligned : add(layout.bytes, aligned);
      }
      IRVisitor::visit_allocate(node);
    }
  } collect;
  for (const Stmt& s : body) collect.visit(s);
  return collect.layout;
}

// The kernel parameter holding every thread's slices of a row workspace.
std::string workspace_param(const Workspace& w) { return "spgen_" + w.name; }

class CudaStmtPrinter : public CStmtPrinter {
 public:
  CudaStmtPrinter(const CExprPrinter& expr, std::string output, std::set<std::string> counted_positions, SharedLayout shared,
                  const EntryList* list = nullptr, Listing listing = Listing::None)
      : CStmtPrinter(expr), output_(std::move(output)), counted_positions_(std::move(counted_positions)),
        shared_(std::move(shared)), list_(list), listing_(listing) {}

 protected:
  std::string loop_preamble(const For& loop, const std::string& indent) const override {
    return loop.annotations.unroll ? indent + "#pragma unroll " + std::to_string(loop.annotations.unroll) + "\n" : "";
  }

  // A bound loop starts at its thread's index and strides over the threads on that index.
  std::string print_for(const For& loop, int depth) override {
    const LoopAnnotations& a = loop.annotations;
    if (a.bind.empty()) return CStmtPrinter::print_for(loop, depth);
    if (a.bind == "scan") return print_scan(loop, depth);
    std::string pad(2 * depth, ' ');
    Expr first = is_const_int(loop.begin, 0) ? thread_index(a) : add(loop.begin, thread_index(a));
    std::string out = loop_preamble(loop, pad);
    out += pad + "for (int64_t " + loop.var + " = " + expr_.print(first) + "; " + loop.var + " < " +
           expr_.print_loop_end(loop.end) + "; " + loop.var + " += " + expr_.print(thread_stride(a)) + ") {\n";
    bool atomic = a.bind_reduction == "atomic";
    atomic_loops_ += atomic;
    ++bound_loops_;
    out += print(loop.body, depth + 1);
    --bound_loops_;
    atomic_loops_ -= atomic;
    out += pad + "}\n";
    std::string combine = a.bind_reduction == "shared"       ? "spgen_block_sum<" + std::to_string(a.bind_threads / 32) + ">"
                          : a.bind_combine == BinOp::Max ? "spgen_warp_max"
                          : a.bind_combine == BinOp::Min ? "spgen_warp_min"
                                                         : "spgen_warp_sum";
    for (const std::string& scalar : a.bind_scalars) out += pad + scalar + " = " + combine + "(" + scalar + ");\n";
    return out;
  }

  // Shared workspaces are views of the kernel's dynamic shared memory; local ones (register
  // tiles) are arrays of the thread's own; the others (row workspaces, around the whole nest)
  // are the thread's slices of device arrays that the host function allocates (row_workspaces).
  std::string print_allocate(const Allocate& node, int depth) override {
    std::string pad(2 * depth, ' ');
    std::string out = pad + "{\n";
    for (const Workspace& w : node.buffers) {
      if (!w.shared && !w.local) {
        if (depth != 1) throw std::logic_error("cuda: a heap workspace (" + w.name + ") inside a loop");
        std::string type = expr_.type_name(w.type);
        out += pad + "  " + type + "* const " + w.name + " = " + workspace_param(w) + " + spgen_thread_number() * (" +
               expr_.print(w.size) + ");  // this thread's slice\n";
        continue;
      }
      if (!w.shared) {
        out += workspace_declarations(Allocate({w}, nullptr), pad + "  ");
        continue;
      }
      std::string type = expr_.type_name(w.type);
      const Expr& offset = shared_.offset.at(w.name);
      out += pad + "  " + type + "* " + w.name + " = reinterpret_cast<" + type + "*>(spgen_shared" +
             (is_const_int(offset, 0) ? "" : " + " + expr_.print(offset)) + ");  // " + expr_.print(w.size) +
             " elements\n";
    }
    return out + print(node.body, depth + 1) + pad + "}\n";
  }

  std::string print_sort(const Sort& sort, const std::string& indent) override {
    std::string first = sort.buffer + (is_const_int(sort.begin, 0) ? "" : " + " + expr_.print(sort.begin));
    return indent + "spgen_sort(" + first + ", " + expr_.print(is_const_int(sort.begin, 0) ? sort.end : sub(sort.end, sort.begin)) +
           ");\n";
  }

  // `for p in [0, n): a[p + 1] += a[p]` (an assemble phase's prefix sum) is an inclusive scan of
  // a[0 .. n], which the block's threads compute together.
  std::string print_scan(const For& loop, int depth) const {
    std::vector<Stmt> body = statements_of(loop.body);
    const Store* store = body.size() == 1 && body[0]->kind == StmtKind::Store ? static_cast<const Store*>(body[0].get()) : nullptr;
    if (!store || !store->accumulate || !is_const_int(loop.begin, 0))
      throw std::logic_error("cuda: a prefix sum that is not a[p + 1] += a[p]");
    return std::string(2 * depth, ' ') + "spgen_block_scan(" + store->buffer + ", " + expr_.print(add(loop.end, int64(1))) +
           ");\n";
  }

  // An entry's slot: the cursor's value before this thread advanced it, as one atomic step.
  std::string print_assign(const Assign& assign, const std::string& indent) override {
    if (!assign.atomic) return CStmtPrinter::print_assign(assign, indent);
    if (listing_ == Listing::None || assign.name != list_->count || !assign.accumulate)
      throw std::logic_error("cuda: an atomic step of " + assign.name + ", which is no entry list's cursor");
    std::string advance = "atomicAdd(reinterpret_cast<unsigned long long*>(" + list_->cursor() + "), 1ull)";
    if (listing_ == Listing::Count) return indent + advance + ";\n";
    return indent + assign.name + " = (int64_t)" + advance + " + 1;  // the slot after this entry's\n";
  }

  std::string print_declare(const Declare& declare, const std::string& indent) override {
    if (listing_ == Listing::Count && declare.name == list_->count) return "";  // the cursor counts
    return CStmtPrinter::print_declare(declare, indent);
  }

  std::string print_store(const Store& store, const std::string& indent) override {
    // Counting, an entry's key and value go unused (the loops compute them alike).
    if (listing_ == Listing::Count && (store.buffer == list_->keys || store.buffer == list_->values))
      return indent + "(void)(" + expr_.print(store.value) + ");\n";
    // An assemble phase counts an output level's entries under each parent; threads that share a
    // parent (a bound loop inside it) would lose counts, so counting is atomic wherever threads run.
    if (store.accumulate && bound_loops_ && counted_positions_.count(store.buffer)) {
      std::string at = "&" + store.buffer + "[" + expr_.print(store.index) + "]";
      if (store.value->type == ScalarType::Int64)  // atomicAdd has no signed 64-bit form; the bits add alike
        return indent + "atomicAdd(reinterpret_cast<unsigned long long*>(" + at + "), (unsigned long long)(" +
               expr_.print(store.value) + "));\n";
      return indent + "atomicAdd(" + at + ", " + expr_.print(store.value) + ");\n";
    }
    if (!store.atomic && (!atomic_loops_ || store.buffer != output_)) return CStmtPrinter::print_store(store, indent);
    return indent + "atomicAdd(&" + store.buffer + "[" + expr_.print(store.index) + "], " + expr_.print(store.value) + ");\n";
  }

 private:
  std::string output_;  // the output's values array: the one that atomic loops add into
  std::set<std::string> counted_positions_;  // the output's pos arrays that an assemble phase counts into
  SharedLayout shared_;
  const EntryList* list_;
  Listing listing_;
  int atomic_loops_ = 0;  // atomic-reduced loops around the statement being printed
  int bound_loops_ = 0;   // loops bound to GPU indices around it
};


// Whether the host can evaluate an expression: it reads sizes only, no device memory.
bool host_computable(const Expr& expr, const LoweredFunc& func) {
  struct Check : IRVisitor {
    std::set<std::string> dims;
    bool ok = true;
    void visit_var(const Var& node) override { ok &= dims.count(node.name) > 0; }
    void visit_load(const Load&) override { ok = false; }
  } check;
  for (const Param& p : func.params)
    if (p.kind == ParamKind::Dim) check.dims.insert(p.name);
  check.visit(expr);
  return check.ok;
}

class Launcher {
 public:
  Launcher(const LoweredFunc& func, const CExprPrinter& expr) : func_(func), expr_(expr) {}

  // The loop that runs on any of `binds` (a grid-stride loop runs on both x axes, warp lanes on
  // threadIdx.x), or null.
  static const For* bound_to(const GpuKernel& kernel, std::initializer_list<const char*> binds) {
    for (const char* bind : binds)
      if (auto loop = kernel.bound.find(bind); loop != kernel.bound.end()) return loop->second;
    return nullptr;
  }

  // Threads per block along x or y.
  static int64_t block_threads(const GpuKernel& kernel, char axis) {
    const For* loop = axis == 'x' ? bound_to(kernel, {"threadIdx.x", "warp", "grid", "scan"}) : bound_to(kernel, {"threadIdx.y"});
    return loop ? loop->annotations.bind_threads : 1;
  }

  // Blocks along x or y: the bound loop's trip count (over the threads of a block, for the
  // grid-stride zero fill) when the host can compute it, else enough to fill the GPU.
  std::string blocks(const GpuKernel& kernel, char axis) const {
    const For* found = axis == 'x' ? bound_to(kernel, {"blockIdx.x", "grid"}) : bound_to(kernel, {"blockIdx.y"});
    if (!found) return "1";
    const For& loop = *found;
    if (!host_computable(loop.begin, func_) || !host_computable(loop.end, func_)) return "spgen_fill_blocks()";
    Expr trips = is_const_int(loop.begin, 0) ? loop.end : sub(loop.end, loop.begin);
    if (loop.annotations.bind == "grid") {
      int64_t threads = loop.annotations.bind_threads;
      trips = binary(BinOp::Div, add(trips, int64(threads - 1)), int64(threads));
    }
    return expr_.print(trips);
  }

  // `shared_bytes`: the kernel's dynamic shared memory (shared_layout).
  std::string launch(const GpuKernel& kernel, const Expr& shared_bytes) const {
    if (!kernel.workspaces.empty()) return launch_with_workspaces(kernel, shared_bytes);
    std::string x = blocks(kernel, 'x'), y = blocks(kernel, 'y');
    int64_t tx = block_threads(kernel, 'x'), ty = block_threads(kernel, 'y');
    std::string args;
    for (const Param& p : kernel.params) args += (args.empty() ? "" : ", ") + p.name;
    for (const Param& p : kernel.list_params) args += (args.empty() ? "" : ", ") + p.name;
    std::string out = "  {  // " + kernel.name + ": " + describe_gpu_kernel(kernel) + "\n";
    std::vector<std::string> checks;
    std::string grid = "1";
    if (x != "1") {
      out += "    const int64_t blocks_x = " + x + ";\n";
      checks.push_back("blocks_x > 0");
      grid = "spgen_grid_dim(blocks_x, " + std::string(kMaxGridX) + ")";
    }
    if (y != "1") {
      out += "    const int64_t blocks_y = " + y + ";\n";
      checks.push_back("blocks_y > 0");
      grid = "dim3(" + (x != "1" ? grid : "1") + ", spgen_grid_dim(blocks_y, " + kMaxGridY + "))";
    }
    std::string block = ty > 1 ? "dim3(" + std::to_string(tx) + ", " + std::to_string(ty) + ")" : std::to_string(tx);
    std::string shared = "0";
    if (!is_const_int(shared_bytes, 0)) {
      out += "    // dynamic shared memory: at most 48 KiB, else the launch fails with cudaErrorInvalidValue\n";
      out += "    const size_t shared_bytes = (size_t)(" + expr_.print(shared_bytes) + ");\n";
      shared = "shared_bytes";
    }
    std::string call = kernel.name + "<<<" + grid + ", " + block + ", " + shared + ", stream>>>(" + args + ");\n";
    if (checks.empty()) {
      out += "    " + call;
    } else {
      std::string condition;
      for (const std::string& c : checks) condition += (condition.empty() ? "" : " && ") + c;
      out += "    if (" + condition + ")  // an empty grid is a launch error\n      " + call;
    }
    return out + "  }\n";
  }

  // A kernel with row workspaces: no more blocks than the GPU runs at once and half its free
  // memory holds (spgen_workspace_blocks; the x axis is capped for the rows of blocks along y),
  // each thread's workspace allocated (and set to its initial value) before the launch and freed
  // after it, all on the stream. An allocation's failure is returned.
  std::string launch_with_workspaces(const GpuKernel& kernel, const Expr& shared_bytes) const {
    std::string x = blocks(kernel, 'x'), y = blocks(kernel, 'y');
    int64_t threads_per_block = block_threads(kernel, 'x') * block_threads(kernel, 'y');
    std::string bytes, names;
    for (const Workspace& w : kernel.workspaces) {
      if (!host_computable(w.size, func_)) throw std::logic_error("cuda: a row workspace whose size the host cannot compute");
      bytes += (bytes.empty() ? "" : " + ") + std::string("spgen_workspace_bytes<") + expr_.type_name(w.type) + ">(" +
               expr_.print(w.size) + ")";
      names += (names.empty() ? "" : ", ") + w.name;
    }
    std::string out = "  {  // " + kernel.name + ": " + describe_gpu_kernel(kernel) + "\n";
    out += "    // each thread's row workspace (" + names + ") lies in device memory\n";
    out += "    const int64_t workspace_bytes = " + bytes + ";  // per thread\n";
    std::string grid_x = "1", grid_y = "1", check;
    if (y != "1") {
      out += "    const int64_t blocks_y = spgen_workspace_blocks(" + y + ", " + std::to_string(threads_per_block) +
             ", workspace_bytes);\n";
      grid_y = "spgen_grid_dim(blocks_y, " + std::string(kMaxGridY) + ")";
      check = "blocks_y > 0";
    }
    if (x != "1") {
      std::string per_row = std::to_string(threads_per_block) + (y != "1" ? " * (int64_t)" + grid_y : "");
      out += "    const int64_t blocks_x = spgen_workspace_blocks(" + x + ", " + per_row + ", workspace_bytes);\n";
      grid_x = "spgen_grid_dim(blocks_x, " + std::string(kMaxGridX) + ")";
      check = check.empty() ? "blocks_x > 0" : "blocks_x > 0 && " + check;
    }
    std::string pad = check.empty() ? "    " : "      ";
    if (!check.empty()) out += "    if (" + check + ") {  // an empty grid is a launch error\n";
    out += pad + "const dim3 grid(" + grid_x + ", " + grid_y + ");\n";
    out += pad + "const int64_t threads = (int64_t)grid.x * grid.y * " + std::to_string(threads_per_block) + ";\n";
    for (const Workspace& w : kernel.workspaces) out += pad + expr_.type_name(w.type) + "* " + w.name + " = nullptr;\n";
    std::string status = "cudaError_t status = ";
    for (const Workspace& w : kernel.workspaces) {
      out += pad + status + "spgen_workspace_alloc(&" + w.name + ", threads * (" + expr_.print(w.size) + "), " +
             fill_byte(w) + ", stream);\n";
      status = "if (status == cudaSuccess) status = ";
    }
    int64_t tx = block_threads(kernel, 'x'), ty = block_threads(kernel, 'y');
    std::string block = ty > 1 ? "dim3(" + std::to_string(tx) + ", " + std::to_string(ty) + ")" : std::to_string(tx);
    std::string args;
    for (const Param& p : kernel.params) args += (args.empty() ? "" : ", ") + p.name;
    for (const Workspace& w : kernel.workspaces) args += (args.empty() ? "" : ", ") + w.name;
    for (const Param& p : kernel.list_params) args += (args.empty() ? "" : ", ") + p.name;
    std::string shared = "0";
    if (!is_const_int(shared_bytes, 0)) {
      out += pad + "// dynamic shared memory: at most 48 KiB, else the launch fails with cudaErrorInvalidValue\n";
      out += pad + "const size_t shared_bytes = (size_t)(" + expr_.print(shared_bytes) + ");\n";
      shared = "shared_bytes";
    }
    out += pad + "if (status == cudaSuccess) {\n";
    out += pad + "  " + kernel.name + "<<<grid, " + block + ", " + shared + ", stream>>>(" + args + ");\n";
    out += pad + "  status = cudaGetLastError();\n" + pad + "}\n";
    for (const Workspace& w : kernel.workspaces)
      out += pad + "if (" + w.name + ") cudaFreeAsync(" + w.name + ", stream);\n";
    out += pad + "if (status != cudaSuccess) return (int)status;\n";
    if (!check.empty()) out += "    }\n";
    return out + "  }\n";
  }

  // The byte every element of a workspace starts as: its init is 0 or the integer -1.
  static std::string fill_byte(const Workspace& w) {
    if (w.init && w.init->kind == ExprKind::IntImm && static_cast<const IntImm&>(*w.init).value == -1) return "0xff";
    if (w.init && w.init->kind == ExprKind::IntImm && static_cast<const IntImm&>(*w.init).value == 0) return "0";
    if (w.init && w.init->kind == ExprKind::FloatImm && static_cast<const FloatImm&>(*w.init).value == 0.0) return "0";
    throw std::logic_error("cuda: a row workspace (" + w.name + ") starting as neither 0 nor -1");
  }

 private:
  const LoweredFunc& func_;
  const CExprPrinter& expr_;
};

// The helpers beyond the preamble's that the kernels call, each from its template.
std::string helpers_used(const std::vector<const LoweredFunc*>& functions) {
  struct Uses : IRVisitor {
    bool block_sum = false, warp_extremum = false, vectors = false, scan = false, row_workspaces = false, sort = false, sort_entries = false;
    std::set<std::string> lists;  // entry lists, which the host sorts
    void visit_allocate(const Allocate& node) override {
      for (const Workspace& w : node.buffers) {
        row_workspaces |= !w.local && !w.shared && !w.growable;
        if (w.growable) lists.insert(w.name);
      }
      IRVisitor::visit_allocate(node);
    }
    void visit_sort(const Sort& node) override {
      (lists.count(node.buffer) ? sort_entries : sort) = true;
      IRVisitor::visit_sort(node);
    }
    void visit_for(const For& node) override {
      block_sum |= node.annotations.bind_reduction == "shared";
      warp_extremum |= node.annotations.bind_reduction == "shuffle" && node.annotations.bind_combine != BinOp::Add;
      scan |= node.annotations.bind == "scan";
      IRVisitor::visit_for(node);
    }
  } uses;
  for (const LoweredFunc* f : functions) {
    uses.visit(f->body);
    uses.vectors |= uses_vectors(f->body);
  }
  return (uses.block_sum ? templates::render("cuda_block_sum.cu.in", {}) : "") +
         (uses.warp_extremum ? templates::render("cuda_warp_extremum.cu.in", {}) : "") +
         (uses.scan ? templates::render("cuda_block_scan.cu.in", {}) : "") +
         (uses.vectors ? templates::render("cuda_vector_helpers.cu.in", {}) : "") +
         (uses.row_workspaces ? templates::render("cuda_row_workspace.cu.in", {}) : "") +
         (uses.sort ? templates::render("cuda_sort.cu.in", {}) : "") +
         (uses.sort_entries ? templates::render("cuda_sort_entries.cu.in", {}) : "");
}

std::string output_values(const LoweredFunc& func) {
  for (const Param& p : func.params)
    if (p.kind == ParamKind::Values && !p.is_const) return p.name;
  return "";
}

}  // namespace

GeneratedFile emit_cuda_header(const LoweredFunc& func, const GenerationContext& context,
                               const std::vector<LoweredFunc>& assemble) {
  std::vector<std::string> docs = {"stream: the cudaStream_t the kernels are enqueued on (0: the default stream)",
                                   "Arrays are device memory (e.g. from cudaMalloc). Returns a cudaError_t value as an int: 0",
                                   "(cudaSuccess) once the kernels are enqueued, else the launch error."};
  if (!assemble.empty()) {
    docs.push_back("The positions an assemble phase builds are in device memory too: to size the next arrays,");
    docs.push_back("copy the last one back (cudaMemcpy, which waits for the phase on the default stream).");
  }
  const std::vector<Stmt> top = statements_of(func.body);
  if (std::any_of(top.begin(), top.end(), [](const Stmt& s) { return as_entry_list(s) != nullptr; })) {
    docs.push_back("Each function (each phase) lists the output's entries at a length it counts first: it waits");
    docs.push_back("for the stream there (cudaStreamSynchronize), so it cannot be captured into a CUDA graph.");
  }
  return emit_abi_header(func, context, "int", {"cudaStream_t stream"}, docs,
                         "\n// The CUDA runtime's stream type, declared here so that this header needs no CUDA headers.\n"
                         "typedef struct CUstream_st* cudaStream_t;\n",
                         assemble);
}

namespace {

// The host reads a device array's element one at a time (spgen_device_read): a temporary's size.
class HostExprPrinter : public CudaExprPrinter {
 protected:
  std::string print_scalar_load(const Load& node, const std::string& index) const override {
    return "spgen_device_read(" + node.buffer + ", " + index + ", stream, status)";
  }
};

// An executor: each part's host function in turn on the same stream (so the parts that add into
// the output run after the one that writes it); the first launch error ends it. Around them, a
// kernel of several statements allocates its temporaries on the stream, and frees them whatever
// happened.
class ExecutorPrinter : public CStmtPrinter {
 public:
  using CStmtPrinter::CStmtPrinter;

 protected:
  std::string print_call(const Call& call, const std::string& indent) override {
    std::string args;
    for (const Expr& arg : call.args) args += "\n" + indent + "        " + expr_.print(arg) + ",";
    if (in_allocate_)
      return indent + "if (status == cudaSuccess)\n" + indent + "  status = (cudaError_t)" + call.callee + "(" + args + "\n" + indent +
             "        stream);\n";
    return indent + "if (const int status = " + call.callee + "(" + args + "\n" + indent + "        stream))\n" + indent +
           "  return status;\n";
  }

  std::string print_allocate(const Allocate& node, int depth) override {
    const std::string pad(2 * depth, ' ');
    HostExprPrinter host;
    std::string out = pad + "{\n" + pad + "  cudaError_t status = cudaSuccess;\n";
    for (const Workspace& w : node.buffers) out += pad + "  " + expr_.type_name(w.type) + "* " + w.name + " = nullptr;\n";
    for (const Workspace& w : node.buffers) {
      const std::string size = host.print(w.size);
      out += pad + "  if (status == cudaSuccess) {\n" + pad + "    const int64_t " + w.name + "_length = " + size + ";\n" + pad +
             "    if (status == cudaSuccess) status = spgen_temporary_alloc(&" + w.name + ", " + w.name + "_length, stream);\n" + pad + "  }\n";
    }
    in_allocate_ = true;
    out += print(node.body, depth + 1);
    in_allocate_ = false;
    for (const Workspace& w : node.buffers) out += pad + "  if (" + w.name + ") cudaFreeAsync(" + w.name + ", stream);\n";
    return out + pad + "  if (status != cudaSuccess) return (int)status;\n" + pad + "}\n";
  }

 private:
  bool in_allocate_ = false;
};

// A function specialized for fixed sizes launches nothing when a size parameter differs.
std::string size_checks(const LoweredFunc& func) {
  std::string out;
  for (const auto& [param, size] : func.fixed_sizes)
    out += "  if (" + param + " != " + std::to_string(size) + ") return (int)cudaErrorInvalidValue;\n";
  return out;
}

std::string emit_executor(const LoweredFunc& executor) {
  CudaExprPrinter expr;
  ExecutorPrinter printer(expr);
  std::vector<std::string> params;
  for (const Param& p : executor.params) params.push_back(c_param(p, false));
  params.push_back("cudaStream_t stream");
  return "\n// Enqueues every part's kernels on `stream`, in order, and returns the first launch error as an\n"
         "// int (0 is cudaSuccess).\n" +
         c_signature("extern \"C\" int", executor.name, params) + " {\n" + size_checks(executor) + printer.print(executor.body, 1) +
         "  return 0;\n}\n";
}

// Indents each line of `text` by two more spaces.
std::string indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    out += "  " + text.substr(start, end - start);
    start = end;
  }
  return out;
}

// The host's part in an entry list (EntryList): allocate the cursor, count the entries, read
// their number back (waiting for the count), allocate the list and the sort's spare half at that
// length (the packing's arrays one longer), list the entries, sort them, pack them, free it all.
// `kernels`: the launches of the counting, listing and packing kernels (as many listing as
// counting). The first error is returned.
std::string entry_list_launches(const EntryList& list, const std::vector<std::string>& kernels, size_t packing_kernels) {
  const size_t listing_kernels = (kernels.size() - packing_kernels) / 2;
  CExprPrinter expr;
  std::string values_type = expr.type_name(list.value_type);
  std::vector<std::pair<std::string, std::string>> arrays = {{list.keys, "int64_t"}, {list.spare(list.keys), "int64_t"}};
  if (!list.values.empty()) {
    arrays.push_back({list.values, values_type});
    arrays.push_back({list.spare(list.values), values_type});
  }
  std::vector<std::pair<std::string, std::string>> work;
  for (const auto& [name, type] : list.work) work.push_back({name, expr.type_name(type)});
  auto launch = [](const std::string& kernel) {
    return "    if (status == cudaSuccess) {\n" + indented(indented(kernel)) + "      status = cudaGetLastError();\n    }\n";
  };
  std::string out = "  {  // " + list.tensor + "'s entries arrive out of order: count them, list them, sort the list, pack it\n";
  out += "    int64_t* " + list.cursor() + " = nullptr;  // the list's next free slot, which threads take atomically\n";
  for (const auto& [name, type] : arrays) out += "    " + type + "* " + name + " = nullptr;\n";
  for (const auto& [name, type] : work) out += "    " + type + "* " + name + " = nullptr;\n";
  out += "    int64_t " + list.count + " = 0;  // the list's length\n";
  out += "    cudaError_t status = spgen_list_alloc(&" + list.cursor() + ", 1, stream);\n";
  for (size_t k = 0; k < listing_kernels; ++k) out += launch(kernels.at(k));
  out += "    // the host waits for the count, to allocate the list at its length\n";
  out += "    if (status == cudaSuccess)\n      status = cudaMemcpyAsync(&" + list.count + ", " + list.cursor() +
         ", sizeof(int64_t), cudaMemcpyDeviceToHost, stream);\n";
  out += "    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);\n";
  for (const auto& [name, type] : arrays)
    out += "    if (status == cudaSuccess) status = spgen_list_alloc(&" + name + ", " + list.count + ", stream);\n";
  for (const auto& [name, type] : work)
    out += "    if (status == cudaSuccess) status = spgen_list_alloc(&" + name + ", " + list.count + " + 1, stream);\n";
  out += "    if (status == cudaSuccess) status = cudaMemsetAsync(" + list.cursor() + ", 0, sizeof(int64_t), stream);\n";
  for (size_t k = 0; k < listing_kernels; ++k) out += launch(kernels.at(listing_kernels + k));
  std::string no_values = "static_cast<" + values_type + "*>(nullptr)";
  out += "    if (status == cudaSuccess)\n      status = spgen_sort_entries(" + list.keys + ", " +
         (list.values.empty() ? no_values : list.values) + ", " + list.spare(list.keys) + ", " +
         (list.values.empty() ? no_values : list.spare(list.values)) + ", " + list.count + ", stream);\n";
  for (size_t k = 2 * listing_kernels; k < kernels.size(); ++k) out += launch(kernels.at(k));
  out += "    if (" + list.cursor() + ") cudaFreeAsync(" + list.cursor() + ", stream);\n";
  for (const auto& [name, type] : arrays) out += "    if (" + name + ") cudaFreeAsync(" + name + ", stream);\n";
  for (const auto& [name, type] : work) out += "    if (" + name + ") cudaFreeAsync(" + name + ", stream);\n";
  return out + "    if (status != cudaSuccess) return (int)status;\n  }\n";
}

// One host function of the ABI (`linkage`: extern "C") or of the file (static): its kernels, then
// the function that launches them in order on a stream.
std::string emit_host_function(const LoweredFunc& func, const std::string& linkage) {
  std::string text;
  CudaExprPrinter expr;
  Launcher launcher(func, expr);
  const std::vector<GpuKernel>& kernels = func.gpu_kernels;  // (passes/split_gpu_kernels.h)
  std::set<std::string> passed;
  std::string launches;
  std::vector<std::string> list_launches;  // an entry list's kernels: counting, listing, packing
  size_t packing_launches = 0;
  std::set<std::string> counted_positions;  // the output levels an assemble phase counts into
  for (const Param& p : func.params)
    if (p.kind == ParamKind::Pos && !p.is_const) counted_positions.insert(p.name);
  for (const GpuKernel& kernel : kernels) {
    int64_t threads = Launcher::block_threads(kernel, 'x') * Launcher::block_threads(kernel, 'y');
    text += "\n// " + describe_gpu_kernel(kernel) + "\n";
    text += "static __global__ void __launch_bounds__(" + std::to_string(threads) + ") " + kernel.name + "(";
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      text += (i ? ",\n    " : "\n    ") + c_param(kernel.params[i], true);
      passed.insert(kernel.params[i].name);
    }
    for (const Workspace& w : kernel.workspaces)
      text += (text.back() == '(' ? "\n    " : ",\n    ") + expr.type_name(w.type) + "* __restrict__ " + workspace_param(w);
    for (const Param& p : kernel.list_params) text += (text.back() == '(' ? "\n    " : ",\n    ") + c_param(p, true);
    text += ") {\n";
    SharedLayout shared = shared_layout(kernel.body);
    if (!is_const_int(shared.bytes, 0)) text += "  extern __shared__ __align__(16) unsigned char spgen_shared[];\n";
    if (!kernel.list) {
      launches += launcher.launch(kernel, shared.bytes);
    } else {
      list_launches.push_back(launcher.launch(kernel, shared.bytes));
      packing_launches += kernel.packs_list;
      if (kernel.ends_list) {
        launches += entry_list_launches(*kernel.list, list_launches, packing_launches);
        list_launches.clear();
        packing_launches = 0;
      }
    }
    CudaStmtPrinter printer(expr, output_values(func), counted_positions, std::move(shared), kernel.list.get(), kernel.listing);
    for (const Stmt& s : kernel.body) text += printer.print(s, 1);
    text += "}\n";
  }
  std::string params;
  for (const Param& p : func.params) params += "\n    " + c_param(p, false) + ",";
  params += "\n    cudaStream_t stream";
  // Sizes the sparse structure already bounds are part of the ABI but may go unread.
  std::string unused;
  for (const Param& p : func.params)
    if (!passed.count(p.name) && !func.is_fixed_size(p.name)) unused += "  (void)" + p.name + ";\n";
  return text + templates::render("cuda_launcher.cu.in", {{"linkage", linkage},
                                                          {"name", func.name},
                                                          {"params", params},
                                                          {"launches", size_checks(func) + unused + launches}});
}

}  // namespace

GeneratedFile emit_cuda_source(const LoweredFunc& func, const GenerationContext& context,
                               const std::vector<LoweredFunc>& assemble, const std::vector<LoweredFunc>& parts) {
  GeneratedFile file;
  file.name = func.name + ".cu";
  file.text = source_preamble("cuda_kernel_preamble.cu.in", file.name, func, context);
  std::vector<const LoweredFunc*> functions;
  for (const LoweredFunc& phase : assemble) functions.push_back(&phase);
  for (const LoweredFunc& part : parts) functions.push_back(&part);
  if (parts.empty()) functions.push_back(&func);
  file.text += helpers_used(functions);
  for (const LoweredFunc* f : functions) file.text += emit_host_function(*f, parts.empty() ? "extern \"C\"" : "static");
  if (func.body && func.body->kind == StmtKind::Allocate) file.text += templates::render("cuda_temporaries.cu.in", {});
  if (!parts.empty()) file.text += emit_executor(func);
  file.text += context.pack.source;  // host routines: an inspector's, pack and unpack
  return file;
}

}  // namespace spgen
