#include "codegen/cpu_backend.h"

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
  std::string loop_preamble(const For& loop, const std::string& indent) const override {
    const LoopAnnotations& a = loop.annotations;
    std::string out;
    if (a.parallel || a.vectorized) {
      out += indent + "#pragma omp ";
      if (a.parallel) {
        static const char* kinds[] = {"static", "dynamic", "guided"};
        out += "parallel for ";
        if (a.vectorized) out += "simd ";
        out += "schedule(" + std::string(kinds[static_cast<int>(a.schedule)]);
        if (a.chunk) out += ", " + std::to_string(a.chunk);
        out += ")";
      } else {
        out += "simd";
      }
      for (const std::string& r : a.simd_reductions) out += " reduction(+:" + r + ")";
      out += "\n";
    }
    if (a.unroll) out += indent + "#pragma GCC unroll " + std::to_string(a.unroll) + "\n";
    return out;
  }
};

}  // namespace

GeneratedFile emit_cpu_source(const LoweredFunc& func, const GenerationContext& context) {
  GeneratedFile file;
  file.name = func.name + ".cpp";
  file.text = templates::render("cpu_kernel_preamble.cpp.in", {{"file", file.name},
                                                               {"version", context.version},
                                                               {"spec_file", context.spec_file},
                                                               {"config_file", context.config_file},
                                                               {"spec", context.spec_text},
                                                               {"header", header_file_name(func)}});
  file.text += "extern \"C\" void " + func.name + "(";
  for (size_t i = 0; i < func.params.size(); ++i)
    file.text += (i ? ",\n    " : "\n    ") + c_param(func.params[i], true);
  file.text += ") {\n";
  // Sizes the sparse structure already bounds are part of the ABI but may go unread.
  for (const Param& p : func.params)
    if (!stmt_reads_var(func.body, p.name) && p.kind == ParamKind::Dim) file.text += "  (void)" + p.name + ";\n";
  CExprPrinter expr;
  CpuStmtPrinter printer(expr);
  file.text += printer.print(func.body, 1);
  file.text += "}\n";
  return file;
}

}  // namespace spgen
