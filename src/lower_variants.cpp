// Kernels per size of an index variable and per row length, behind an entry point that chooses
// among them (steps 5d and 5e of compile(), lower.cpp).
#include "lower_variants.h"

#include "ir/loop_ir_printer.h"
#include "passes/size_variants.h"
#include "passes/specialize_sizes.h"
#include "support/diagnostics.h"

namespace spgen {

namespace {

// Whether the kernel builds its output's structure (rather than writing a dense output or
// values into an input's structure).
bool assembles_output(const Compilation& c) {
  const sparse::SparseBuffer& out = c.program.output();
  return !c.assemble.empty() || (!out.format.all_dense() && out.shares_structure_with.empty());
}

// One variant of the kernel: `read`'s spec under `config` (named after the variant, so are its
// parts), lowered and specialized. Its functions check no sizes: the entry point does, and calls
// it only where it applies.
Compilation lower_variant(const Compilation& read, Config config, const LowerKernel& lower_kernel) {
  Compilation v;
  v.spec = read.spec;
  v.config = std::move(config);
  v.config.specialize.clear();
  v.config.row_variants.clear();
  lower_kernel(v);
  specialize_sizes(v.func, v.config.sizes);
  v.func.fixed_sizes.clear();
  for (loops::LoweredFunc& part : v.parts) part.fixed_sizes.clear();
  return v;
}

// The entry point `name` chooses among `cases`, else the generic kernel (c.func, renamed), which
// joins the parts with the variants.
void dispatch_to_variants(Compilation& c, const std::string& name, const std::vector<DispatchCase>& cases, const std::string& comment) {
  loops::LoweredFunc generic = std::move(c.func);
  generic.name = name + "_generic";
  generic.fixed_sizes.clear();
  c.func = build_dispatch(name, generic, cases, comment);
  specialize_sizes(c.func, c.config.sizes);  // the sizes every kernel assumes, checked on entry
  c.parts.push_back(std::move(generic));
  c.stage2_dump += "// entry point\n" + loops::dump_stage2(c.func);
}

}  // namespace

// 5d. A kernel compiled for each listed size of one index variable, and `c.func` becomes the
// entry point choosing among them; the generic kernel runs any other size. `read`: the spec and
// config as read, before lowering changed them.
void add_size_variants(Compilation& c, const Compilation& read, const LowerKernel& lower_kernel) {
  std::optional<SizeVariants> variants = choose_size_variants(c.config, c.program, c.func, assembles_output(c), c.schedule);
  if (!variants) return;
  const std::string name = c.func.name;
  std::vector<DispatchCase> cases;
  for (int64_t size : variants->sizes) {
    Config config = read.config;
    config.name = variant_name(name, *variants, size);
    config.sizes[variants->var] = size;
    Compilation v = lower_variant(read, std::move(config), lower_kernel);
    c.stage2_dump += "// the kernel for " + variants->var + " = " + std::to_string(size) + "\n" + v.stage2_dump;
    for (loops::LoweredFunc& part : v.parts) c.parts.push_back(std::move(part));
    cases.push_back({size_equals(c.func, variants->var, size), v.func.name});
    c.parts.push_back(std::move(v.func));
    if (c.config.auto_schedule)
      for (std::string& line : schedule_differences(c.schedule, v.schedule, variants->var + " = " + std::to_string(size)))
        c.variant_schedule_notes.push_back(std::move(line));
  }
  dispatch_to_variants(c, name, cases,
                       "the kernel compiled for this size of " + variants->var + ", where there is one (constant trip counts)");
  c.size_variants = std::move(variants);
}

// 5e. Kernels scheduled otherwise for rows of at least so many stored entries on average
// ("variants"), chosen on entry by pos[dim] >= N * dim. (`auto` needs none: its SpMV's masked
// tail serves short and long rows alike.)
void add_row_length_variants(Compilation& c, const Compilation& read, const LowerKernel& lower_kernel) {
  std::vector<RowLengthVariant> variants = c.config.row_variants;
  if (variants.empty()) return;
  auto refuse = [&](const std::string& why) { throw CompileError(format_config_error(c.config.file, "/variants", why)); };
  if (c.size_variants) refuse("a kernel with \"specialize\" (or auto's kernels per size) does not take row variants too");
  if (assembles_output(c))
    refuse("the kernel assembles its output " + c.program.output().tensor + ", which variants by row length do not do yet (drop "
           "\"variants\", or give " + c.program.output().tensor + " a dense format)");
  const std::string name = c.func.name;
  std::vector<DispatchCase> cases;
  std::string dumps;
  for (RowLengthVariant& variant : variants) {
    loops::Expr condition = mean_row_length_at_least(c.program, c.func, variant.min_entries_per_row);
    if (!condition) {
      refuse("the kernel has no rows to measure: no input stores a compressed level right below the dense level of " +
             c.program.iteration.iterators.front().var + " (as CSR does)");
    }
    Config config = read.config;
    config.name = row_variant_name(name, variant.min_entries_per_row);
    config.auto_schedule = false;
    config.schedule = variant.schedule;
    Compilation v = lower_variant(read, std::move(config), lower_kernel);
    dumps += "// the kernel for rows of at least " + std::to_string(variant.min_entries_per_row) + " entries on average\n" +
             v.stage2_dump;
    for (loops::LoweredFunc& part : v.parts) c.parts.push_back(std::move(part));
    cases.push_back({condition, v.func.name});
    c.parts.push_back(std::move(v.func));
  }
  c.stage2_dump += dumps;
  dispatch_to_variants(c, name, cases, "the kernel scheduled for rows this long on average, where there is one");
  c.row_variants = std::move(variants);
}

}  // namespace spgen
