// What lowering needs to know of one stored level, asked of the level instead of tested on its
// kind: one class per sparse::AxisKind (as TACO's mode formats and MLIR's SparseTensorLevel),
// made by level_access(), the one place that switches on the kind. Adding a level kind means
// adding a class here. (Blocked levels and COO's runs are properties of the axis every class
// reads: axis_length(), level_coordinate(), and the by-runs flags its callers pass.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen::lowering {

// The variables a search for a coordinate in a level declares (locate): the position found, the
// end of the parent's range, the search's bounds, whether it was found, and for a COO level
// visited by runs, the end of the coordinate's run and that search's middle.
struct SearchNames {
  std::string position, end, high, middle, found, run_end, run_middle;
};

class LevelAccess {
 public:
  explicit LevelAccess(const sparse::Axis& axis) : axis_(axis) {}
  virtual ~LevelAccess() = default;
  const sparse::Axis& axis() const { return axis_; }

  // The number of positions of the levels down to this one, given that of the levels above
  // (`parent`): in the ABI's prose ("1" for none above), and as an expression.
  virtual std::string size_prose(const std::string& parent) const = 0;
  virtual loops::Expr size(loops::Expr parent, loops::ScalarType index_type) const = 0;

  // The positions [begin, end) under parent position `parent`: a stored level's streamed range.
  // `parent_run_end`: where the parent is a COO level iterated by runs, its run's end ("" for
  // one entry).
  virtual std::pair<loops::Expr, loops::Expr> positions_under(loops::Expr parent, const std::string& parent_run_end,
                                                              loops::ScalarType index_type) const;
  // The coordinate stored at `position` (`begin`: the parent's first position, which a ragged
  // level's coordinates count from; null for the others).
  virtual loops::Expr coordinate_at(const std::string& position, loops::Expr begin, loops::ScalarType index_type) const;
  // Capabilities. One coordinate per parent position, so no loop over it (singleton, where its
  // parent is one entry); coordinates that count positions from the parent's first, so a cursor
  // keeps that first position (ragged); a coordinate found directly, without a search, so a loop
  // locates it rather than streaming it where another operand streams (ragged).
  virtual bool one_per_parent() const { return false; }
  virtual bool coordinate_is_offset() const { return false; }
  virtual bool locatable() const { return false; }
  // An interleaved ELL level: its positions under a parent are no range, so a loop walks the
  // parent's slot_count() slots (its `width`, or its slice's) and declares each slot's
  // position, slot_position(). `parent_first`: the first position of the parent's level, which
  // the groups count from. Null elsewhere.
  virtual bool walks_slots() const { return false; }
  virtual loops::Expr slot_count(loops::Expr /*parent*/, loops::Expr /*parent_first*/, loops::ScalarType /*index_type*/) const {
    return nullptr;
  }
  virtual loops::Expr slot_position(loops::Expr /*parent*/, loops::Expr /*parent_first*/, loops::Expr /*slot*/,
                                    loops::ScalarType /*index_type*/) const {
    return nullptr;
  }
  // `inner`, run only where the coordinate in `coordinate_var` is stored (ELL: not padding).
  virtual loops::Stmt only_stored(const std::string& /*coordinate_var*/, loops::Stmt inner) const { return inner; }
  // A cursor at `position` has coordinates left before `end` (whose coordinate is `coordinate`).
  virtual loops::Expr not_done(const std::string& position, const std::string& end, loops::Expr coordinate) const;

  // The statements that find `coordinate` among the positions [begin, last) under parent
  // position `parent` without a cursor (a level located inside another operand's blocks), and
  // declare `names`: the position, and whether the coordinate is stored there. `parent_found`
  // (null: always) says the parent itself is stored; `in_run`: a singleton's parent is a run of
  // entries, not one entry. By kind: a check of the parent's one entry (singleton), a direct
  // lookup (ragged), else a binary search, up to the padding (ELL), with its run's end (COO).
  virtual std::vector<loops::Stmt> locate(const SearchNames& names, loops::Expr parent, loops::Expr begin, loops::Expr last,
                                          loops::Expr parent_found, loops::Expr coordinate, bool in_run,
                                          loops::ScalarType index_type) const;
  // How a coordinate is found in this level without a cursor (inside blocks): for the comments.
  // `in_run`: a singleton's parent is a run, not one entry.
  virtual std::string locate_strategy(bool in_run) const = 0;
  // What a cursor over this level visits, where that is not plain (for the stage II comment).
  // `by_runs`: a COO level merged run by run; `iterates_run`: a singleton under such a level.
  virtual std::string describe(bool by_runs, bool iterates_run) const;

  // The ABI's prose of the level's pos and crd arrays. `format`: the tensor's; `iterates_run`
  // and `last_level` as in describe (a singleton's order promise).
  virtual std::string pos_prose() const;
  // The length of the pos array, given the positions of the levels above (`parent`, "1" for none).
  virtual std::string pos_size_prose(const std::string& parent) const { return parent == "1" ? "2" : parent + " + 1"; }
  virtual std::string crd_prose(const Format& format, bool iterates_run, bool last_level) const;

 protected:
  // A binary search's test at `at`: its coordinate lies before `coordinate` (true on a prefix).
  virtual loops::Expr before(loops::Expr at, loops::Expr coordinate, loops::ScalarType index_type) const;

  const sparse::Axis& axis_;
};

// The one switch on the level's kind.
std::unique_ptr<LevelAccess> level_access(const sparse::Axis& axis);

// A dense level's extent: its dimension, or for a blocked level the number of blocks (the last
// one padded) or the block size; in prose and as an expression.
std::string axis_length_prose(const sparse::Axis& axis);
loops::Expr axis_length(const sparse::Axis& axis);
// The number of positions of `buffer`'s first `levels` levels (all of them by default).
loops::Expr structure_size(const sparse::Program& program, const sparse::SparseBuffer& buffer, loops::ScalarType index_type,
                           size_t levels = SIZE_MAX);
loops::Expr block_count(const std::string& dim, int64_t block);

// The coordinate at which a level is read: its variable's, or the part a level blocked apart
// stores (its variable / or % its block); in prose and as an expression.
std::string level_coordinate_prose(const sparse::Axis& axis);
loops::Expr level_coordinate(const sparse::Axis& axis);

}  // namespace spgen::lowering
