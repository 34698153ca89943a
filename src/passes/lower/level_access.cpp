#include "passes/lower/level_access.h"

#include <algorithm>

#include "passes/lower/output_levels.h"

namespace spgen::lowering {

using namespace loops;

namespace {

Expr load_index(const std::string& array, Expr at, ScalarType index_type) {
  return cast(ScalarType::Int64, load(array, std::move(at), index_type));
}

// Every coordinate in [0, length): reached by arithmetic, never streamed.
class DenseFixedLevel : public LevelAccess {
 public:
  using LevelAccess::LevelAccess;
  std::string size_prose(const std::string& parent) const override {
    std::string length = axis_length_prose(axis_);
    return parent == "1" ? length : parent + " * " + length;
  }
  Expr size(Expr parent, ScalarType) const override { return mul(parent, axis_length(axis_)); }
  std::string locate_strategy(bool) const override { return "binary search"; }
};

// A pos/crd pair, unique (CSR's columns) or not (COO's top level, one position per entry).
class CompressedLevel : public LevelAccess {
 public:
  using LevelAccess::LevelAccess;
  std::string size_prose(const std::string& parent) const override { return axis_.pos + "[" + parent + "]"; }
  Expr size(Expr parent, ScalarType index_type) const override { return load_index(axis_.pos, std::move(parent), index_type); }
  std::string locate_strategy(bool) const override {
    return axis_.unique ? "binary search" : "binary search for its run of equal coordinates";
  }
  std::string describe(bool by_runs, bool) const override {
    return axis_.tensor + (by_runs ? " (runs of equal coordinates)" : "");
  }
  std::string crd_prose(const Format& format, bool, bool) const override {
    const int level = axis_.level;
    if (axis_.lists_every_coordinate)  // (SELL's rows)
      return axis_.ordered ? ": coordinates, every one of the dimension once, increasing"
                           : ": coordinates, every one of the dimension once, in any order (sorted by length within windows)";
    return axis_.unique ? ": coordinates, strictly increasing under each parent"
           : segment_end(format, level) > level && segment_end(format, level) + 1 < static_cast<int>(format.levels.size())
               ? ": coordinates, non-decreasing; one position per distinct coordinates of the COO segment (the "
                 "levels below it hang under that position)"
               : ": coordinates, non-decreasing; one position per entry (coordinates repeat)";
  }
};

// Ragged: a pos array; coordinates 0 .. n-1 under each parent, so a coordinate is located
// directly (pos[parent] + coordinate) where it is not streamed.
class RaggedLevel : public LevelAccess {
 public:
  using LevelAccess::LevelAccess;
  std::string size_prose(const std::string& parent) const override { return axis_.pos + "[" + parent + "]"; }
  Expr size(Expr parent, ScalarType index_type) const override { return load_index(axis_.pos, std::move(parent), index_type); }
  Expr coordinate_at(const std::string& position, Expr begin, ScalarType) const override { return sub(var(position), begin); }
  bool coordinate_is_offset() const override { return true; }
  bool locatable() const override { return true; }
  std::string locate_strategy(bool) const override {
    return "direct lookup at " + axis_.pos + "[parent] + " + level_coordinate_prose(axis_);
  }
  std::string describe(bool, bool) const override { return axis_.tensor + " (ragged: coordinates 0 .. n-1)"; }
  std::vector<Stmt> locate(const SearchNames& names, Expr, Expr begin, Expr last, Expr, Expr coordinate, bool,
                           ScalarType) const override {
    const std::string &p = names.position, &end = names.end;
    std::vector<Stmt> stmts;
    stmts.push_back(std::make_shared<Declare>(end, ScalarType::Int64, last, false));
    stmts.push_back(std::make_shared<Declare>(p, ScalarType::Int64, add(begin, coordinate), false));
    stmts.push_back(std::make_shared<Declare>(names.found, ScalarType::Bool, binary(BinOp::Lt, var(p), var(end)), false));
    return stmts;
  }
  std::string pos_prose() const override {
    return ": positions; parent position p stores coordinates 0 .. " + axis_.pos + "[p+1]-" + axis_.pos +
           "[p]-1 at positions " + axis_.pos + "[p] ...";
  }
};

// ELL: `width` slots per parent position in a crd array, increasing, then padding marked -1.
// Interleaved (SELL-C): the slots of each group of C parent positions stored slot by slot.
class EllLevel : public LevelAccess {
 public:
  using LevelAccess::LevelAccess;
  std::string size_prose(const std::string& parent) const override {
    const std::string width = std::to_string(axis_.width);
    if (axis_.interleave > 0) {
      const std::string lanes = std::to_string(axis_.interleave);
      return "ceil(" + parent + " / " + lanes + ") * " + lanes + " * " + width;
    }
    return (parent == "1" ? "" : parent + " * ") + width;
  }
  Expr size(Expr parent, ScalarType) const override {
    if (axis_.interleave > 0) {
      const int64_t lanes = axis_.interleave;
      return mul(binary(BinOp::Div, add(parent, int64(lanes - 1)), int64(lanes)), int64(lanes * axis_.width));
    }
    return mul(parent, int64(axis_.width));
  }
  std::pair<Expr, Expr> positions_under(Expr parent, const std::string&, ScalarType) const override {
    Expr begin = mul(parent, int64(axis_.width));
    return {begin, add(begin, int64(axis_.width))};
  }
  bool walks_slots() const override { return axis_.interleave > 0; }
  Expr slot_count(Expr, Expr, ScalarType) const override { return axis_.interleave > 0 ? int64(axis_.width) : nullptr; }
  // (p - first) / C groups of C * width slots, then the slot's row of C, then the lane.
  Expr slot_position(Expr parent, Expr parent_first, Expr slot, ScalarType) const override {
    const int64_t lanes = axis_.interleave;
    if (lanes == 0) return nullptr;
    return add(add(mul(group(parent, parent_first), int64(lanes * axis_.width)), mul(slot, int64(lanes))), lane(parent, parent_first));
  }
  Expr not_done(const std::string& position, const std::string& end, Expr coordinate) const override {
    Expr before_end = LevelAccess::not_done(position, end, coordinate);
    return logical_and(before_end, binary(BinOp::Le, int64(0), std::move(coordinate)));
  }
  std::string locate_strategy(bool) const override {
    return "binary search in its " + std::to_string(axis_.width) + " ELL slots, up to the padding";
  }
  std::string describe(bool, bool) const override {
    return axis_.tensor + (axis_.interleave > 0 ? " (ELL slots interleaved by " + std::to_string(axis_.interleave) + " rows, up to the padding)"
                                                : " (ELL slots, up to the padding)");
  }

 protected:
  // Parent position p's group of C and its lane there, counted from the parent level's first.
  Expr group(Expr parent, Expr parent_first) const { return binary(BinOp::Div, offset(parent, parent_first), int64(axis_.interleave)); }
  Expr lane(Expr parent, Expr parent_first) const { return binary(BinOp::Mod, offset(parent, parent_first), int64(axis_.interleave)); }
  static Expr offset(Expr parent, Expr parent_first) { return is_const_int(parent_first, 0) ? parent : sub(parent, parent_first); }

 public:
  // ELL rows shorter than the width end in padding, marked by a negative coordinate.
  Stmt only_stored(const std::string& coordinate_var, Stmt inner) const override {
    return std::make_shared<If>(binary(BinOp::Le, int64(0), var(coordinate_var)), inner, nullptr);
  }
  Expr before(Expr at, Expr coordinate, ScalarType index_type) const override {
    Expr less_than = LevelAccess::before(at, std::move(coordinate), index_type);
    return logical_and(binary(BinOp::Le, int64(0), load_index(axis_.crd, at, index_type)), less_than);  // padding sorts last
  }
  std::string crd_prose(const Format&, bool, bool) const override {
    const std::string width = std::to_string(axis_.width);
    if (axis_.interleave > 0) {
      const std::string lanes = std::to_string(axis_.interleave);
      return ": coordinates, " + width + " per parent position, increasing, then padding marked -1; stored by groups of " + lanes +
             " parent positions (counted from the level above's first), slot by slot: slot s of position p at (p / " + lanes +
             ") * " + std::to_string(axis_.interleave * axis_.width) + " + s * " + lanes + " + p % " + lanes;
    }
    return ": coordinates, " + width + " per parent position, increasing, then padding marked -1";
  }
};

// SELL-C-sigma's slices: an interleaved ELL level whose width varies by group of C parent
// positions, group g holding pos[g+1] - pos[g] slots (the longest of its rows).
class SlicedEllLevel : public EllLevel {
 public:
  using EllLevel::EllLevel;
  std::string size_prose(const std::string& parent) const override {
    const std::string lanes = std::to_string(axis_.interleave);
    return axis_.pos + "[ceil(" + parent + " / " + lanes + ")] * " + lanes;
  }
  Expr size(Expr parent, ScalarType index_type) const override {
    const int64_t lanes = axis_.interleave;
    Expr groups = binary(BinOp::Div, add(parent, int64(lanes - 1)), int64(lanes));
    return mul(load_index(axis_.pos, groups, index_type), int64(lanes));
  }
  Expr slot_count(Expr parent, Expr parent_first, ScalarType index_type) const override {
    Expr g = group(parent, parent_first);
    return sub(load_index(axis_.pos, add(g, int64(1)), index_type), load_index(axis_.pos, g, index_type));
  }
  // (pos[g] + s) * C + lane: the group's first slot, the slot's row of C, the lane.
  Expr slot_position(Expr parent, Expr parent_first, Expr slot, ScalarType index_type) const override {
    const int64_t lanes = axis_.interleave;
    Expr first_slot = load_index(axis_.pos, group(parent, parent_first), index_type);
    return add(mul(add(first_slot, slot), int64(lanes)), lane(parent, parent_first));
  }
  std::string locate_strategy(bool) const override { return "binary search in its slice's slots, up to the padding"; }
  std::string describe(bool, bool) const override {
    return axis_.tensor + " (SELL slices of " + std::to_string(axis_.interleave) + " rows, up to the padding)";
  }
  std::string pos_prose() const override {
    const std::string lanes = std::to_string(axis_.interleave);
    return ": slices; group g of " + lanes + " parent positions (counted from the level above's first) holds " + axis_.pos +
           "[g+1]-" + axis_.pos + "[g] slots, its longest position's count";
  }
  std::string pos_size_prose(const std::string& parent) const override {
    return "ceil(" + parent + " / " + std::to_string(axis_.interleave) + ") + 1";
  }
  std::string crd_prose(const Format&, bool, bool) const override {
    const std::string lanes = std::to_string(axis_.interleave);
    return ": coordinates, stored by slices of " + lanes + " parent positions (counted from the level above's first), slot by "
           "slot: slot s of position p at (" + axis_.pos + "[p / " + lanes + "] + s) * " + lanes + " + p % " + lanes +
           "; a position's coordinates increase, then padding marked -1 fills its slice's slots";
  }
};

// COO's lower levels: one coordinate per parent position, crd only.
class SingletonLevel : public LevelAccess {
 public:
  using LevelAccess::LevelAccess;
  bool one_per_parent() const override { return true; }
  std::string size_prose(const std::string& parent) const override { return parent; }
  Expr size(Expr parent, ScalarType) const override { return parent; }
  std::pair<Expr, Expr> positions_under(Expr parent, const std::string& parent_run_end, ScalarType) const override {
    return {parent, parent_run_end.empty() ? add(parent, int64(1)) : var(parent_run_end)};  // the parent's run, or its one entry
  }
  std::string locate_strategy(bool in_run) const override {
    return in_run ? "binary search in the run above" : "a check of its parent's one entry";
  }
  std::string describe(bool by_runs, bool iterates_run) const override {
    return axis_.tensor + (by_runs ? " (runs of equal coordinates within the run above)"
                                   : iterates_run ? " (the entries of the run above)" : "");
  }
  std::vector<Stmt> locate(const SearchNames& names, Expr parent, Expr begin, Expr last, Expr parent_found, Expr coordinate,
                           bool in_run, ScalarType index_type) const override {
    if (in_run) return LevelAccess::locate(names, parent, begin, last, parent_found, coordinate, in_run, index_type);
    // The parent's entry (visited one at a time) has this coordinate or none.
    Expr found = binary(BinOp::Eq, load_index(axis_.crd, parent, index_type), coordinate);
    if (parent_found) found = logical_and(parent_found, found);
    std::vector<Stmt> stmts;
    stmts.push_back(std::make_shared<Declare>(names.position, ScalarType::Int64, parent, false));
    stmts.push_back(std::make_shared<Declare>(names.found, ScalarType::Bool, found, false));
    return stmts;
  }
  std::string crd_prose(const Format&, bool iterates_run, bool last_level) const override {
    std::string what = ": the coordinate of each entry, one per parent position";
    // Merged run by run: a run's coordinates must come in order (pack sorts them so).
    if (iterates_run)
      what += last_level ? "; strictly increasing among entries that agree on the levels above"
                         : "; non-decreasing among entries that agree on the levels above";
    return what;
  }
};

}  // namespace

std::pair<Expr, Expr> LevelAccess::positions_under(Expr parent, const std::string&, ScalarType index_type) const {
  return {load_index(axis_.pos, parent, index_type), load_index(axis_.pos, add(parent, int64(1)), index_type)};
}

Expr LevelAccess::coordinate_at(const std::string& position, Expr, ScalarType index_type) const {
  return load_index(axis_.crd, var(position), index_type);
}

Expr LevelAccess::not_done(const std::string& position, const std::string& end, Expr) const {
  return binary(BinOp::Lt, var(position), var(end));
}

std::string LevelAccess::describe(bool, bool) const { return axis_.tensor; }

Expr LevelAccess::before(Expr at, Expr coordinate, ScalarType index_type) const {
  return binary(BinOp::Lt, load_index(axis_.crd, std::move(at), index_type), std::move(coordinate));
}

std::vector<Stmt> LevelAccess::locate(const SearchNames& names, Expr, Expr begin, Expr last, Expr, Expr coordinate, bool,
                                      ScalarType index_type) const {
  const std::string &p = names.position, &end = names.end, &high = names.high;
  auto crd_at = [&](Expr at) { return load_index(axis_.crd, std::move(at), index_type); };
  // The first position in [low, high) where `below` (true on a prefix) fails.
  auto bound = [&](const std::string& low, const std::string& middle, auto below, const std::string& what) -> Stmt {
    return std::make_shared<While>(
        what, binary(BinOp::Lt, var(low), var(high)),
        block({std::make_shared<Declare>(middle, ScalarType::Int64, binary(BinOp::Div, add(var(low), var(high)), int64(2)), false),
               std::make_shared<If>(below(var(middle)), std::make_shared<Assign>(low, add(var(middle), int64(1)), false),
                                    std::make_shared<Assign>(high, var(middle), false))}));
  };
  auto less = [&](Expr at) { return before(std::move(at), coordinate, index_type); };
  std::string searched = "search " + axis_.index_var + " in " + axis_.tensor;
  std::vector<Stmt> stmts;
  stmts.push_back(std::make_shared<Declare>(p, ScalarType::Int64, begin, true));
  stmts.push_back(std::make_shared<Declare>(end, ScalarType::Int64, last, false));
  stmts.push_back(std::make_shared<Declare>(high, ScalarType::Int64, var(end), true));
  stmts.push_back(bound(p, names.middle, less, searched));
  if (names.run_end.empty()) {
    stmts.push_back(std::make_shared<Declare>(
        names.found, ScalarType::Bool,
        logical_and(binary(BinOp::Lt, var(p), var(end)), binary(BinOp::Eq, crd_at(var(p)), coordinate)), false));
    return stmts;
  }
  // A run: it ends at the first coordinate above this one.
  auto not_above = [&](Expr at) { return binary(BinOp::Le, crd_at(at), coordinate); };
  stmts.push_back(std::make_shared<Declare>(names.run_end, ScalarType::Int64, var(p), true));
  stmts.push_back(std::make_shared<Assign>(high, var(end), false));
  stmts.push_back(bound(names.run_end, names.run_middle, not_above, "run of " + axis_.index_var + " in " + axis_.tensor));
  stmts.push_back(std::make_shared<Declare>(names.found, ScalarType::Bool, binary(BinOp::Lt, var(p), var(names.run_end)), false));
  return stmts;
}

std::string LevelAccess::pos_prose() const {
  return ": positions; the entries under parent position p are " + axis_.pos + "[p] .. " + axis_.pos + "[p+1]-1";
}

std::string LevelAccess::crd_prose(const Format&, bool, bool) const { return ""; }

std::unique_ptr<LevelAccess> level_access(const sparse::Axis& axis) {
  switch (axis.kind) {
    case sparse::AxisKind::DenseFixed: return std::make_unique<DenseFixedLevel>(axis);
    case sparse::AxisKind::DenseVariable: return std::make_unique<RaggedLevel>(axis);
    case sparse::AxisKind::SparseFixed:
      if (axis.sliced) return std::make_unique<SlicedEllLevel>(axis);
      return std::make_unique<EllLevel>(axis);
    case sparse::AxisKind::SparseVariable: return std::make_unique<CompressedLevel>(axis);
    case sparse::AxisKind::Singleton: return std::make_unique<SingletonLevel>(axis);
  }
  return std::make_unique<DenseFixedLevel>(axis);
}

std::string axis_length_prose(const sparse::Axis& axis) {
  switch (axis.block_part) {
    case BlockPart::Block: return "ceil(" + axis.length + " / " + std::to_string(axis.block) + ")";
    case BlockPart::InBlock: return std::to_string(axis.block);
    case BlockPart::None: break;
  }
  return axis.length;
}

Expr axis_length(const sparse::Axis& axis) {
  switch (axis.block_part) {
    case BlockPart::Block: return block_count(axis.length, axis.block);
    case BlockPart::InBlock: return int64(axis.block);
    case BlockPart::None: break;
  }
  return var(axis.length);
}

Expr block_count(const std::string& dim, int64_t block) {
  return block == 1 ? var(dim) : binary(BinOp::Div, add(var(dim), int64(block - 1)), int64(block));
}

std::string level_coordinate_prose(const sparse::Axis& axis) {
  if (!axis.blocked_apart() || axis.block == 1) return axis.index_var;  // (an in-block level of 1 is dense)
  return axis.index_var + (axis.block_part == BlockPart::Block ? " / " : " % ") + std::to_string(axis.block);
}

Expr level_coordinate(const sparse::Axis& axis) {
  if (!axis.blocked_apart() || (axis.block == 1 && axis.block_part == BlockPart::Block)) return var(axis.index_var);
  if (axis.block == 1) return int64(0);  // the in-block coordinate of a block of one
  return binary(axis.block_part == BlockPart::Block ? BinOp::Div : BinOp::Mod, var(axis.index_var), int64(axis.block));
}

Expr structure_size(const sparse::Program& program, const sparse::SparseBuffer& buffer, ScalarType index_type, size_t levels) {
  Expr size = int64(1);
  for (size_t l = 0; l < std::min(levels, buffer.axes.size()); ++l) size = level_access(program.axes[buffer.axes[l]])->size(size, index_type);
  return size;
}

}  // namespace spgen::lowering
