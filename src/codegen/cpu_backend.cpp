#include "codegen/cpu_backend.h"

#include <algorithm>
#include <set>

#include "codegen/abi_header.h"
#include "codegen/c_printer.h"
#include "ir/loop_ir_visitor.h"
#include "support/templates.h"

namespace spgen {

using namespace loops;

namespace {

class CpuStmtPrinter : public CStmtPrinter {
 public:
  using CStmtPrinter::CStmtPrinter;

 protected:
  // A workspace's touched coordinates: the radix sort of templates/cpu_sort.cpp.in.
  // With values: the list of an output's entries, keyed by their flattened coordinates.
  std::string print_sort(const Sort& sort, const std::string& indent) override {
    const bool from_start = is_const_int(sort.begin, 0);
    const std::string offset = from_start ? "" : " + " + expr_.print(sort.begin);
    const std::string count = from_start ? expr_.print(sort.end) : expr_.print(sort.end) + " - " + expr_.print(sort.begin);
    growable_.erase(sort.buffer);  // sorted: its length is known, the stores that follow stay inside it
    growable_.erase(sort.values);
    if (!sort.values.empty())
      return indent + "spgen_sort_entries(" + sort.buffer + ".data()" + offset + ", " + sort.values + ".data()" + offset + ", " +
             count + ");\n";
    return indent + "spgen_sort_coordinates(" + sort.buffer + ".data()" + offset + ", " + count + ");\n";
  }

  std::string loop_preamble(const For& loop, const std::string& indent) const override {
    const LoopAnnotations& a = loop.annotations;
    std::string out;
    if (a.parallel || a.vectorized) {
      out += indent + "#pragma omp ";
      if (a.parallel) {
        static const char* kinds[] = {"static", "dynamic", "guided"};
        out += in_parallel_region_ ? "for " : "parallel for ";
        if (a.vectorized) out += "simd ";
        if (a.schedule == ParallelSchedule::EvenRows) {
          out += "schedule(runtime)";  // (set by spgen_even_rows_schedule: print_for)
        } else {
          out += "schedule(" + std::string(kinds[static_cast<int>(a.schedule)]);
          if (a.chunk) out += ", " + std::to_string(a.chunk);
          out += ")";
        }
      } else {
        out += "simd";
      }
      for (const std::string& r : a.simd_reductions) out += " reduction(" + std::string(combine_name(a.simd_combine)) + ":" + r + ")";
      if (a.parallel && !a.private_scalars.empty()) {
        out += " firstprivate(";
        for (size_t k = 0; k < a.private_scalars.size(); ++k) out += (k ? ", " : "") + a.private_scalars[k];
        out += ")";
      }
      out += "\n";
    }
    if (a.unroll) out += indent + "#pragma GCC unroll " + std::to_string(a.unroll) + "\n";
    return out;
  }

  // In a parallel region, a loop run in thread order (joining per-thread lists) runs in each
  // thread, one after another: an ordered loop of one iteration per thread around it.
  std::string print_for(const For& loop, int depth) override {
    if (loop.annotations.parallel && loop.annotations.schedule == ParallelSchedule::EvenRows) {
      // The runtime schedule for this loop, chosen from the rows' positions and put back after it.
      std::string pad(2 * depth, ' ');
      return pad + "{\n" + pad + "#ifdef _OPENMP\n" + pad + "  const spgen_even_rows_schedule spgen_rows_schedule(" +
             loop.annotations.rows_pos + ", " + expr_.print(loop.end) + ", " + std::to_string(loop.annotations.chunk) + ");\n" +
             pad + "#endif\n" + CStmtPrinter::print_for(loop, depth + 1) + pad + "}\n";
    }
    if (!loop.annotations.in_thread_order || !in_parallel_region_) return CStmtPrinter::print_for(loop, depth);
    std::string pad(2 * depth, ' ');
    return pad + "#ifdef _OPENMP\n" + pad + "#pragma omp for ordered schedule(static, 1)\n" + pad +
           "for (int spgen_thread = 0; spgen_thread < omp_get_num_threads(); spgen_thread++)\n" + pad +
           "#pragma omp ordered\n" + pad + "#endif\n" + CStmtPrinter::print_for(loop, depth);
  }

  // A growable list doubles its length when a store reaches past its end.
  std::string print_store(const Store& store, const std::string& indent) override {
    std::string text = CStmtPrinter::print_store(store, indent);
    if (growable_.count(store.buffer)) {
      const std::string at = expr_.print(store.index);
      text = indent + "if (" + at + " >= static_cast<int64_t>(" + store.buffer + ".size())) " + store.buffer + ".resize(2 * " + at +
             " + 64);\n" + text;
    }
    return store.atomic ? indent + "#pragma omp atomic\n" + text : text;
  }

  // Workspaces around a parallel loop are per thread: open the parallel region first, declare
  // them inside it, and share the loop's iterations with `omp for`. Statements after the loop
  // (a private copy's combine) run in every thread.
  std::string print_allocate(const Allocate& node, int depth) override {
    for (const Workspace& w : node.buffers)
      if (w.growable) growable_.insert(w.name);
    std::vector<Stmt> stmts = statements_of(node.body);
    const For* loop = stmts.empty() ? nullptr : as_for(stmts.front());
    if (!loop || !loop->annotations.parallel) return CStmtPrinter::print_allocate(node, depth);
    std::string pad(2 * depth, ' ');
    std::string out = pad + "#pragma omp parallel\n" + pad + "{\n" + workspace_declarations(node, pad + "  ");
    in_parallel_region_ = true;
    out += print(node.body, depth + 1);
    in_parallel_region_ = false;
    return out + pad + "}\n";
  }

 private:
  bool in_parallel_region_ = false;
  std::set<std::string> growable_;  // the lists being appended to (names are unique in a function)
};

// Per-thread lists joined in thread order under a parallel loop (omp_get_num_threads).
bool joins_in_thread_order(const LoweredFunc& func) {
  struct Finder : IRVisitor {
    bool parallel = false, found = false;
    void visit_for(const For& node) override {
      parallel |= node.annotations.parallel;
      found |= node.annotations.in_thread_order && parallel;
      IRVisitor::visit_for(node);
    }
  } finder;
  finder.visit(func.body);
  return finder.found;
}

// A loop's work shared out per thread (balance by nonzeros): spgen_thread_count.
bool uses_thread_count(const LoweredFunc& func) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_thread_count(const ThreadCount&) override { found = true; }
  } finder;
  finder.visit(func.body);
  return finder.found;
}

// A parallel loop whose schedule is chosen on each call from its rows (templates/cpu_even_rows.cpp.in).
bool uses_even_rows(const LoweredFunc& func) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_for(const For& node) override {
      found |= node.annotations.parallel && node.annotations.schedule == ParallelSchedule::EvenRows;
      IRVisitor::visit_for(node);
    }
  } finder;
  finder.visit(func.body);
  return finder.found;
}

// Array parameters are read through loads, sizes through variables; an assemble phase reads no
// values, and sizes the sparse structure already bounds may go unread.
bool param_is_used(const LoweredFunc& func, const Param& param) {
  struct Uses : IRVisitor {
    std::string name;
    bool found = false;
    void visit_load(const Load& node) override {
      found |= node.buffer == name;
      IRVisitor::visit_load(node);
    }
    void visit_store(const Store& node) override {
      found |= node.buffer == name;
      IRVisitor::visit_store(node);
    }
  } uses;
  uses.name = param.name;
  uses.visit(func.body);
  return uses.found || stmt_reads_var(func.body, param.name);
}

// `linkage`: "extern \"C\"" for what the header declares, "static" for a decomposition's parts.
// A function specialized for fixed sizes returns a status: SPGEN_ERR_DIM, before it touches
// anything, when a size parameter differs from the size its body assumes.
std::string print_function(const LoweredFunc& func, const std::string& linkage = "extern \"C\"") {
  const bool checks_sizes = !func.fixed_sizes.empty();
  std::string text = linkage + (checks_sizes ? " int " : " void ") + func.name + "(";
  for (size_t i = 0; i < func.params.size(); ++i)
    text += (i ? ",\n    " : "\n    ") + c_param(func.params[i], true);
  text += ") {\n";
  for (const auto& [param, size] : func.fixed_sizes)
    text += "  if (" + param + " != " + std::to_string(size) + ") return SPGEN_ERR_DIM;\n";
  for (const Param& p : func.params)
    if (!param_is_used(func, p) && !func.is_fixed_size(p.name)) text += "  (void)" + p.name + ";\n";
  CExprPrinter expr;
  CpuStmtPrinter printer(expr);
  text += printer.print(func.body, 1);
  if (checks_sizes) text += "  return SPGEN_OK;\n";
  text += "}\n";
  return text;
}

}  // namespace

GeneratedFile emit_cpu_source(const LoweredFunc& func, const GenerationContext& context, const std::vector<LoweredFunc>& assemble,
                              const std::vector<LoweredFunc>& parts) {
  GeneratedFile file;
  file.name = func.name + ".cpp";
  const bool math = uses_math(func.body) || std::any_of(parts.begin(), parts.end(), [](const LoweredFunc& part) { return uses_math(part.body); });
  // A kernel of several statements holds its temporaries in std::unique_ptr arrays (whole, or a
  // row per thread where statements fuse).
  auto uninitialised_heap = [](const LoweredFunc& f) {
    struct Finder : IRVisitor {
      bool found = false;
      void visit_allocate(const Allocate& node) override {
        for (const Workspace& w : node.buffers) found |= !w.vector && !w.local && !w.shared && !w.growable && !w.init;
        IRVisitor::visit_allocate(node);
      }
    } finder;
    if (f.body) finder.visit(f.body);
    return finder.found;
  };
  const bool temporaries = uninitialised_heap(func) || std::any_of(parts.begin(), parts.end(), uninitialised_heap);
  file.text = source_preamble("cpu_kernel_preamble.cpp.in", file.name, func, context,
                              std::string(math ? "#include <cmath>\n" : "") + (temporaries ? "#include <memory>\n" : ""));
  if (uses_vectors(func.body) ||
      std::any_of(parts.begin(), parts.end(), [](const LoweredFunc& part) { return uses_vectors(part.body); }))
    file.text += std::string(*templates::lookup("cpu_vector_helpers.cpp.in")) + "\n";
  if (uses_gathers(func.body) ||
      std::any_of(parts.begin(), parts.end(), [](const LoweredFunc& part) { return uses_gathers(part.body); }))
    file.text += std::string(*templates::lookup("cpu_vector_gather.cpp.in")) + "\n";
  if (uses_masked_sums(func.body) ||
      std::any_of(parts.begin(), parts.end(), [](const LoweredFunc& part) { return uses_masked_sums(part.body); }))
    file.text += std::string(*templates::lookup("cpu_masked_sum.cpp.in")) + "\n";
  if (uses_exp(func.body) || std::any_of(parts.begin(), parts.end(), [](const LoweredFunc& part) { return uses_exp(part.body); }))
    file.text += std::string(*templates::lookup("cpu_exp.cpp.in")) + "\n";
  if (uses_batched_lane_sums(func.body) ||
      std::any_of(parts.begin(), parts.end(), [](const LoweredFunc& part) { return uses_batched_lane_sums(part.body); }))
    file.text += std::string(*templates::lookup("cpu_batched_lane_sums.cpp.in")) + "\n";
  if (uses_sort(func.body) ||
      std::any_of(assemble.begin(), assemble.end(), [](const LoweredFunc& phase) { return uses_sort(phase.body); }))
    file.text += std::string(*templates::lookup("cpu_sort.cpp.in")) + "\n";
  if (uses_sort(func.body, true)) file.text += std::string(*templates::lookup("cpu_sort_entries.cpp.in")) + "\n";
  if (uses_thread_count(func) || std::any_of(parts.begin(), parts.end(), uses_thread_count))
    file.text += std::string(*templates::lookup("cpu_thread_count.cpp.in")) + "\n";
  if (uses_even_rows(func) || std::any_of(parts.begin(), parts.end(), uses_even_rows))
    file.text += std::string(*templates::lookup("cpu_even_rows.cpp.in")) + "\n";
  if (joins_in_thread_order(func) ||
      std::any_of(assemble.begin(), assemble.end(), [](const LoweredFunc& phase) { return joins_in_thread_order(phase); }))
    file.text += std::string(*templates::lookup("cpu_thread_order.cpp.in")) + "\n";
  for (const LoweredFunc& phase : assemble) file.text += print_function(phase) + "\n";
  for (const LoweredFunc& part : parts) file.text += print_function(part, "static") + "\n";
  file.text += print_function(func);
  file.text += context.pack.source;  // the tensors' pack/unpack routines, if any
  return file;
}

}  // namespace spgen
