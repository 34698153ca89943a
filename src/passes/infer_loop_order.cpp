#include "passes/infer_loop_order.h"

#include <algorithm>
#include <map>
#include <set>

#include "passes/lower_to_loops.h"

namespace spgen {

namespace {

// The loop where an axis's coordinate is known: a variable a blocked operand splits is known
// in its in-block loop.
std::string loop_of(const sparse::Program& program, const std::string& var) {
  const sparse::BlockedVar* blocked = program.blocked(var);
  return blocked ? blocked->inner : var;
}

// Soft preferences: each dense tensor (output included) would like its modes in storage order.
std::vector<sparse::OrderConstraint> soft_order_preferences(const sparse::Program& program) {
  std::vector<sparse::OrderConstraint> preferences;
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    for (size_t b = 1; b < buffer.axes.size(); ++b)
      for (size_t a = 0; a < b; ++a)
        if (!program.axes[buffer.axes[b]].blocked_apart() &&
            (buffer.gathered_level < 0 || static_cast<int>(a) < buffer.gathered_level))  // gathered in any order
          preferences.push_back({loop_of(program, program.axes[buffer.axes[a]].index_var),
                                 loop_of(program, program.axes[buffer.axes[b]].index_var), buffer.tensor});
  }
  return preferences;
}

// The levels of `format` that lie between a mode's floordiv and mod levels and store other,
// unblocked modes (blocks of rows: dense i / r, compressed j, dense i % r stores j there).
std::vector<size_t> levels_inside_row_blocks(const Format& format) {
  std::vector<size_t> inside;
  for (size_t a = 0; a < format.levels.size(); ++a) {
    if (format.block(a).part != BlockPart::Block) continue;
    for (size_t b = a + 1; b < format.levels.size(); ++b) {
      if (format.mode_order[b] != format.mode_order[a]) continue;
      for (size_t l = a + 1; l < b; ++l)
        if (format.block(l).part == BlockPart::None && std::find(inside.begin(), inside.end(), l) == inside.end())
          inside.push_back(l);
      break;
    }
  }
  std::sort(inside.begin(), inside.end());
  return inside;
}

bool splittable(const Format& format, size_t level) {
  return format.levels[level] == LevelKind::Dense || format.levels[level] == LevelKind::Compressed;
}

// What would let both `a.tensor` and `b.tensor` be iterated.
std::string conflict_advice(const sparse::Program& program, const Config& config, const sparse::OrderConstraint& a,
                            const sparse::OrderConstraint& b) {
  for (const std::string& tensor : {a.tensor, b.tensor}) {
    const Format& format = config.format_of(tensor);
    for (size_t level : levels_inside_row_blocks(format))
      if (!splittable(format, level)) {
        const sparse::SparseBuffer& buffer = program.buffer(tensor);
        return tensor + " stores " + buffer.indices[format.mode_order[level]] + " in a " +
               level_kind_name(format.levels[level]) +
               " level between its block levels (blocks of rows), which cannot be split into blocks of 1 (as a "
               "dense or compressed level there can: " + tensor +
               " is then lowered as BSR r x 1, the other operands located inside its blocks); make that level "
               "compressed, or store " + tensor + " unblocked (csr) or dense";
      }
  }
  if (config.format_of(a.tensor).is_blocked() && config.format_of(b.tensor).is_blocked())
    return "store them in blocks alike (the same blocks, their levels in the same order: " + a.tensor + "'s or " +
           b.tensor + "'s), or one of them unblocked or dense";
  return "store one of them in the other mode order (e.g. csr instead of csc) or dense";
}

// Why no loop can be placed: two operands store the same indices in opposite orders.
LoopOrderConflict conflicting_orders(const sparse::Program& program, const std::vector<sparse::OrderConstraint>& hard,
                                     const std::set<std::string>& placed, const Config& config) {
  // A tensor in blocks of rows that could be lowered as BSR r x 1 conflicts with csr operands
  // only so: where the order still fails, another pair conflicts, which is named first.
  auto splits = [&](const std::string& tensor) {
    const Format& format = config.format_of(tensor);
    const std::vector<size_t> inside = levels_inside_row_blocks(format);
    return !inside.empty() && std::all_of(inside.begin(), inside.end(), [&](size_t l) { return splittable(format, l); });
  };
  for (bool skip_splitting : {true, false})
  for (const sparse::OrderConstraint& a : hard)
    for (const sparse::OrderConstraint& b : hard)
      if (!placed.count(a.before) && a.tensor != b.tensor && a.before == b.after && a.after == b.before &&
          !(skip_splitting && (splits(a.tensor) || splits(b.tensor))))
        return LoopOrderConflict(format_config_error(
            config.file, "/tensors/" + b.tensor + "/format",
            "no loop order can iterate both " + a.tensor + " (which stores " + a.after + " inside " + a.before +
                ") and " + b.tensor + " (which stores " + b.after + " inside " + b.before +
                ") through their compressed levels; " + conflict_advice(program, config, a, b)));
  return LoopOrderConflict(format_config_error(config.file, "/tensors",
                                          "the operands' storage orders conflict: no loop order iterates every "
                                          "compressed level inside its parents"));
}

// The loop order that places every loop after its hard predecessors, each time the one with
// fewest unplaced soft predecessors (ties keep spec order: deterministic), or empty if none does.
std::vector<sparse::Iterator> order_loops(const sparse::Program& program, const std::vector<sparse::OrderConstraint>& hard,
                                          const std::vector<sparse::OrderConstraint>& soft, std::set<std::string>& placed) {
  std::vector<sparse::Iterator> remaining = program.iteration.iterators;
  std::vector<sparse::Iterator> ordered;
  placed.clear();
  auto unplaced_predecessors = [&](const std::vector<sparse::OrderConstraint>& edges, const std::string& var) {
    int count = 0;
    for (const sparse::OrderConstraint& e : edges)
      if (e.after == var && e.before != var && !placed.count(e.before)) ++count;
    return count;
  };
  while (!remaining.empty()) {
    int best = -1, best_soft = 0;
    for (size_t r = 0; r < remaining.size(); ++r) {
      if (unplaced_predecessors(hard, remaining[r].var) > 0) continue;
      int soft_count = unplaced_predecessors(soft, remaining[r].var);
      if (best < 0 || soft_count < best_soft) {
        best = static_cast<int>(r);
        best_soft = soft_count;
      }
    }
    if (best < 0) return {};
    placed.insert(remaining[best].var);
    ordered.push_back(remaining[best]);
    remaining.erase(remaining.begin() + best);
  }
  return ordered;
}

std::vector<sparse::OrderConstraint> hard_loop_constraints(const sparse::Program& program) {
  std::vector<sparse::OrderConstraint> hard = sparse::hard_order_constraints(program);
  // A level located inside a blocked operand's blocks waits for the in-block loop of its index.
  for (sparse::OrderConstraint& c : hard) {
    c.before = loop_of(program, c.before);
    c.after = loop_of(program, c.after);
  }
  return hard;
}

// The loop order of infer_loop_order, or empty where none exists (`hard`, `placed`: as found).
std::vector<sparse::Iterator> find_loop_order(const sparse::Program& program, const Config& config,
                                              const std::set<std::string>& only, std::vector<sparse::OrderConstraint>& hard,
                                              std::set<std::string>& placed) {
  hard = hard_loop_constraints(program);
  std::vector<sparse::OrderConstraint> soft = soft_order_preferences(program);
  // A part of its own (ordered_apart) orders its nest's loops alone (its output is listed, in
  // any order), and no other's.
  auto ignored = [&](const sparse::OrderConstraint& c) {
    return only.empty() ? program.buffer(c.tensor).ordered_apart : !only.count(c.tensor);
  };
  std::erase_if(hard, ignored);
  std::erase_if(soft, ignored);
  std::vector<sparse::Iterator> ordered = order_loops(program, hard, soft, placed);
  // An output stored against the operands' order (dcsc from csr operands) has its entries
  // listed and sorted (passes/lower_to_loops.cpp): only the operands' orders are hard then.
  if (ordered.empty() && output_may_be_listed(program, config)) {
    std::vector<sparse::OrderConstraint> operands;
    for (const sparse::OrderConstraint& c : hard)
      if (c.tensor != program.output().tensor) operands.push_back(c);
    std::set<std::string> placed_without_output;
    ordered = order_loops(program, operands, soft, placed_without_output);
  }
  return ordered;
}

}  // namespace

bool loop_order_exists(const sparse::Program& program, const Config& config) {
  std::vector<sparse::OrderConstraint> hard;
  std::set<std::string> placed;
  return !find_loop_order(program, config, {}, hard, placed).empty();
}

bool loop_order_holds(const sparse::Program& program, const std::set<std::string>& tensors) {
  auto position = [&](const std::string& loop) {
    for (size_t d = 0; d < program.iteration.iterators.size(); ++d)
      if (program.iteration.iterators[d].var == loop) return static_cast<int>(d);
    return -1;
  };
  // (A dense level is located at its coordinate wherever its parents' loops are: only a level
  // iterated through its parent's positions needs its parents' loops outside its own.)
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    if (!tensors.count(buffer.tensor) || !buffer.shares_structure_with.empty()) continue;
    for (size_t b = 1; b < buffer.axes.size(); ++b) {
      const sparse::Axis& below = program.axes[buffer.axes[b]];
      if (below.kind == sparse::AxisKind::DenseFixed || below.blocked_apart()) continue;
      const int after = position(loop_of(program, below.index_var));
      for (size_t a = 0; a < b; ++a) {
        const int before = position(loop_of(program, program.axes[buffer.axes[a]].index_var));
        if (before >= 0 && after >= 0 && before > after) return false;
      }
    }
  }
  return true;
}

std::optional<LoopOrderConflict> infer_loop_order_or_conflict(sparse::Program& program, const Config& config,
                                                              const std::set<std::string>& only) {
  std::vector<sparse::OrderConstraint> hard;
  std::set<std::string> placed;
  std::vector<sparse::Iterator> ordered = find_loop_order(program, config, only, hard, placed);
  if (ordered.empty()) return conflicting_orders(program, hard, placed, config);
  program.iteration.iterators = ordered;
  return std::nullopt;
}

void infer_loop_order(sparse::Program& program, const Config& config, const std::set<std::string>& only) {
  if (std::optional<LoopOrderConflict> conflict = infer_loop_order_or_conflict(program, config, only)) throw *conflict;
}

std::optional<LoopOrderConflict> loop_order_conflict(const sparse::Program& program, const Config& config,
                                                     const std::set<std::string>& only) {
  std::vector<sparse::OrderConstraint> hard;
  std::set<std::string> placed;
  if (!find_loop_order(program, config, only, hard, placed).empty()) return std::nullopt;
  return conflicting_orders(program, hard, placed, config);
}

std::vector<std::string> block_levels_inside_row_blocks(Config& config) {
  std::vector<std::string> rewritten;
  for (auto& [tensor, format] : config.formats) {
    const std::vector<size_t> inside = levels_inside_row_blocks(format);
    const Format& unsplit = format;  // (clang 14 does not capture structured bindings)
    if (inside.empty() || !std::all_of(inside.begin(), inside.end(), [&](size_t l) { return splittable(unsplit, l); }))
      continue;
    format.blocks.resize(format.levels.size());
    format.widths.resize(format.levels.size(), 0);
    for (size_t l : inside) {  // (j / 1 in place; j % 1 after the other in-block levels, as BSR's j_in)
      format.blocks[l] = {BlockPart::Block, 1};
      format.levels.push_back(LevelKind::Dense);
      format.mode_order.push_back(format.mode_order[l]);
      format.widths.push_back(0);
      format.blocks.push_back({BlockPart::InBlock, 1});
    }
    format.name += ", its levels between the blocks in blocks of 1 (bsr r x 1: the same arrays)";
    rewritten.push_back(tensor);
  }
  return rewritten;
}

}  // namespace spgen
