// Stage II IR: plain loop nests over position space. Nodes are immutable plain data shared by
// pointer; passes rewrite them with IRMutator and inspect them with IRVisitor. Backends print it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spgen::loops {

enum class ScalarType { Bool, Int32, Int64, Float32, Float64 };
const char* scalar_type_name(ScalarType type);  // "int64", ...

// ---- expressions ----
enum class ExprKind { IntImm, FloatImm, Var, Load, Binary, Neg, Cast, Select, LaneSum, MaskedSum, MathFn, ThreadCount };
enum class BinOp { Add, Sub, Mul, Div, Mod, Min, Max, Lt, Le, Eq, Ne, And, Or };

struct ExprNode {
  ExprKind kind;
  ScalarType type;
  ExprNode(ExprKind k, ScalarType t) : kind(k), type(t) {}
  virtual ~ExprNode() = default;
};
using Expr = std::shared_ptr<const ExprNode>;

struct IntImm : ExprNode {
  int64_t value;
  IntImm(int64_t v, ScalarType t) : ExprNode(ExprKind::IntImm, t), value(v) {}
};
struct FloatImm : ExprNode {
  double value;
  std::string spelling;  // literal as written in the spec, for readable output
  FloatImm(double v, std::string s, ScalarType t) : ExprNode(ExprKind::FloatImm, t), value(v), spelling(std::move(s)) {}
};
struct Var : ExprNode {
  std::string name;
  Var(std::string n, ScalarType t) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
};
// buffer[index]. A `vector` load reads the native SIMD vector of consecutive elements starting at
// `index` (see passes/explicit_vectors.h), or with `lanes` > 0 a vector of exactly that many (a
// 32-byte one where the native vector may be wider); `type` is then the element type. A vector
// load with a `gather_lane` gathers instead: lane l of the vector is buffer[index] with
// gather_lane = l.
struct Load : ExprNode {
  std::string buffer;
  Expr index;
  bool vector;
  std::string gather_lane;
  int64_t lanes;
  Load(std::string b, Expr i, ScalarType t, bool v = false, std::string lane = "", int64_t n = 0)
      : ExprNode(ExprKind::Load, t), buffer(std::move(b)), index(std::move(i)), vector(v), gather_lane(std::move(lane)), lanes(n) {}
};
struct Binary : ExprNode {
  BinOp op;
  Expr a, b;
  Binary(BinOp o, Expr x, Expr y, ScalarType t) : ExprNode(ExprKind::Binary, t), op(o), a(std::move(x)), b(std::move(y)) {}
};
struct Neg : ExprNode {
  Expr a;
  explicit Neg(Expr x);
};
// A function of the spec language on a floating-point value (max and min are Binary).
enum class MathOp { Exp, Log, Sqrt, Abs };
const char* math_op_name(MathOp op);  // "exp", ...
struct MathFn : ExprNode {
  MathOp op;
  Expr a;
  MathFn(MathOp o, Expr x) : ExprNode(ExprKind::MathFn, x->type), op(o), a(std::move(x)) {}
};
// cpu: the number of threads a parallel loop started here would get (omp_get_max_threads, 1
// without OpenMP), read once before the loop whose work it shares out (balance by nonzeros).
struct ThreadCount : ExprNode {
  ThreadCount() : ExprNode(ExprKind::ThreadCount, ScalarType::Int64) {}
};
struct Cast : ExprNode {
  Expr a;
  Cast(ScalarType t, Expr x) : ExprNode(ExprKind::Cast, t), a(std::move(x)) {}
};

// cond ? a : b, evaluating only the chosen operand (a load guarded by its bounds check).
struct Select : ExprNode {
  Expr cond, a, b;
  Select(Expr c, Expr x, Expr y) : ExprNode(ExprKind::Select, x->type), cond(std::move(c)), a(std::move(x)), b(std::move(y)) {}
};

// The sum of buffer[0 .. lanes): the partial sums of a reduction kept in lanes (`vectorize` with
// `lanes`), added in vector registers rather than through the array (which would reload parts of
// a vector just stored, stalling on store forwarding).
struct LaneSum : ExprNode {
  std::string buffer;
  int64_t lanes;
  LaneSum(std::string b, int64_t n, ScalarType t) : ExprNode(ExprKind::LaneSum, t), buffer(std::move(b)), lanes(n) {}
};

// The sum of `value` over `lane` in [0, count), count < `max`: a masked tail of a sum in lanes
// (`vectorize` with "tail": "masked"). The generated code evaluates `value` for whole vectors of
// lanes, past count too (the schedule checks that those reads stay inside their arrays), and
// masks the lanes past count out: no branch per element.
// Where the value is a product whose first factor reads consecutive elements
// (`A_vals[p + lane] * x[...]`), that factor is kept apart as `row` (the Load of its element at
// lane 0, `A_vals[p]`) and `value` is the rest: the code loads the factor's lanes as one vector
// rather than lane by lane (masked_sum_with_row).
struct MaskedSum : ExprNode {
  std::string lane;
  Expr count, value;
  int64_t max;
  Expr row;  // null, or the consecutive first factor's Load at lane 0
  MaskedSum(std::string l, Expr n, Expr v, int64_t m, Expr r = nullptr)
      : ExprNode(ExprKind::MaskedSum, v->type), lane(std::move(l)), count(std::move(n)), value(std::move(v)), max(m), row(std::move(r)) {}
};

// ---- statements ----
enum class StmtKind { Block, For, While, If, Declare, Assign, Store, Comment, Allocate, Sort, Call, Barrier, Prefetch, LaneSums };

struct StmtNode {
  StmtKind kind;
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
};
using Stmt = std::shared_ptr<const StmtNode>;

struct Block : StmtNode {
  std::vector<Stmt> stmts;
  explicit Block(std::vector<Stmt> s) : StmtNode(StmtKind::Block), stmts(std::move(s)) {}
};

// EvenRows: static or dynamic (chunk), chosen on each call from the row positions `rows_pos`.
enum class ParallelSchedule { Static, Dynamic, Guided, EvenRows };

// How a loop runs. Schedules set these; the lowering creates every loop serial.
// How a reduction combines (Add, Max, Min): "+", "max", "min" (OpenMP's reduction names).
const char* combine_name(BinOp combine);

struct LoopAnnotations {
  bool parallel = false;
  ParallelSchedule schedule = ParallelSchedule::Static;
  int64_t chunk = 0;  // 0: the runtime's default
  std::string rows_pos;  // EvenRows: the pos array whose entries [begin, end] the loop's rows hold
  bool vectorized = false;
  int64_t unroll = 0;  // 0: no unroll request
  // Why the loop must stay sequential and scalar (it advances co-iteration cursors), or empty.
  std::string sequential_reason;
  // The loop walks a non-unique level (COO rows): iterations may add into one output entry, so
  // it may run in parallel only with a reduction (atomic adds or private copies).
  bool repeats_coordinates = false;
  // A loop over a stored level's positions: the tensor whose level drives it (so passes that
  // reason about the walk, such as `auto`'s statistics, know whose rows it visits); else empty.
  std::string walks;
  // cpu: the outermost loop of a listed output appends its entries to these lists (keys, values
  // but for an assemble phase, and their count; empty: none). `parallel` gives each thread lists
  // of its own, joined after the loop in thread order, which under a static schedule without
  // chunk is the loop's order, so the result is the sequential loop's. Its iterations may repeat
  // or sum into entries: no reduction is needed.
  struct ListedEntries {
    std::string keys, values, count;
  } listed;
  // cpu: in a parallel region, the loop runs in each thread, one thread after another in thread
  // order (the concatenation of per-thread lists); elsewhere it is a plain loop.
  bool in_thread_order = false;
  // cpu: a loop over rows that `parallel`'s merge-path balance cuts (schedule/balance_ops.cpp),
  // until the scheduler's finish makes it two loops: rows [begin, last_row) reading only the
  // positions [first, end) of `pos`, then row last_row (below `rows`), which a later part
  // finishes, with its stores into `output` moved to row `part` of `carry` (row_size entries a row).
  struct CutRows {
    std::string pos;
    Expr first, end;
    std::string last_row;
    Expr rows;
    std::string output, carry, part;
    Expr row_size;
  } cut;
  std::vector<std::string> simd_reductions;  // scalars a vectorized (or reduced parallel) loop sums into
  BinOp simd_combine = BinOp::Add;            // ... or takes the max (min) into: a max reduction's
  // Scalars declared before a parallel loop that its body sets (a cursor): each thread keeps its
  // own copy, starting from the value before the loop (OpenMP's firstprivate).
  std::vector<std::string> private_scalars;
  // cuda (`bind`): the GPU index the iterations are spread over: blockIdx.x, blockIdx.y,
  // threadIdx.x, threadIdx.y, warp (the 32 lanes of a warp) or grid (every thread of the grid:
  // the output's zero fill, a loop that is its own kernel); empty: every thread runs the loop in full. A bound loop starts at
  // its thread's index and strides by the number of threads (or blocks) on that index.
  std::string bind;
  int64_t bind_threads = 0;  // threads on a threadIdx/warp/grid index: the block's size along it
  // How iterations that add into the same output entry combine: "atomic" (the loop's stores into
  // the output are atomic adds) or "shuffle" (each lane sums into bind_scalars; after the loop
  // the warp adds them up in lane 0); empty: iterations write distinct entries.
  std::string bind_reduction;
  std::vector<std::string> bind_scalars;
  BinOp bind_combine = BinOp::Add;  // how a shuffle combines bind_scalars: add, or max/min (a max reduction)
  // cuda: the loop is a kernel of its own, its iterations spread over every thread of the grid
  // (the rest of a sum beside a blocked operand, whose rows are distinct output rows).
  bool own_kernel = false;
  // Whether an op made the loop run otherwise than one iteration after another in one thread:
  // what passes that rewrite a plain loop (batch, fuse, precompute, the block passes) leave alone.
  bool scheduled() const { return parallel || vectorized || unroll || !bind.empty(); }
};

// for (var = begin; var < end; ++var) body
// `label` is the name schedules use (the index variable a loop iterates, or a split's
// outer/inner name); `var` is the C variable, which differs for position loops (pA1 iterates j).
struct For : StmtNode {
  std::string label;
  std::string var;
  Expr begin, end;
  Stmt body;
  LoopAnnotations annotations;
  For(std::string l, std::string v, Expr b, Expr e, Stmt s, LoopAnnotations a = {})
      : StmtNode(StmtKind::For), label(std::move(l)), var(std::move(v)), begin(std::move(b)), end(std::move(e)),
        body(std::move(s)), annotations(std::move(a)) {}
};

// while (cond) body: a co-iteration (two-finger merge) loop. `label` is the index variable it
// iterates, so schedules can name it in their errors.
struct While : StmtNode {
  std::string label;
  Expr cond;
  Stmt body;
  While(std::string l, Expr c, Stmt b) : StmtNode(StmtKind::While), label(std::move(l)), cond(std::move(c)), body(std::move(b)) {}
};

struct If : StmtNode {
  Expr cond;
  Stmt then_case, else_case;  // else_case may be null
  If(Expr c, Stmt t, Stmt e) : StmtNode(StmtKind::If), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};

// A local variable: `type name = init;`. Mutable only if `is_mutable` (accumulators).
struct Declare : StmtNode {
  std::string name;
  ScalarType type;
  Expr init;
  bool is_mutable;
  Declare(std::string n, ScalarType t, Expr i, bool m)
      : StmtNode(StmtKind::Declare), name(std::move(n)), type(t), init(std::move(i)), is_mutable(m) {}
};

// name = value, or name += value when `accumulate`. An `atomic` one is a cursor's step that
// threads take at once (cuda: a list's next slot): `name += value` as one atomic addition to a
// count that every thread shares, after which `name` holds this thread's sum. It is no scalar a
// thread sums into, so a loop around it needs no reduction.
// name = value, or with `accumulate` a reduction into the scalar: name += value, or with
// `combine` Max (Min) name = max(name, value) (a max reduction's accumulator).
struct Assign : StmtNode {
  std::string name;
  Expr value;
  bool accumulate;
  bool atomic;
  BinOp combine;
  Assign(std::string n, Expr v, bool acc, bool at = false, BinOp c = BinOp::Add)
      : StmtNode(StmtKind::Assign), name(std::move(n)), value(std::move(v)), accumulate(acc), atomic(at), combine(c) {}
  // The value it leaves in the scalar, where it combines other than by adding: max(name, value).
  Expr combined() const;
};

// buffer[index] = value, or += when `accumulate`. An `atomic` store is an addition that other
// threads may make to the same entry at the same time (a parallel loop's reduction). A `vector`
// store writes a native SIMD vector to the consecutive elements starting at `index` (with
// `lanes` > 0, a vector of that many, as a Load's).
struct Store : StmtNode {
  std::string buffer;
  Expr index, value;
  bool accumulate;
  bool atomic;
  bool vector;
  int64_t lanes;
  Store(std::string b, Expr i, Expr v, bool acc, bool at = false, bool vec = false, int64_t n = 0)
      : StmtNode(StmtKind::Store), buffer(std::move(b)), index(std::move(i)), value(std::move(v)), accumulate(acc),
        atomic(at), vector(vec), lanes(n) {}
};

// Scratch arrays (workspaces) that live while `body` runs. When the body's outermost loop runs
// in parallel, each thread gets its own copy.
struct Workspace {
  std::string name;
  ScalarType type;
  Expr size;
  Expr init;  // every element starts as this; null for shared memory, which starts uninitialised
  // A small array of constant size in the function's frame, which the compiler can keep in
  // registers (vector lanes); its init is zero. Otherwise a heap array.
  bool local = false;
  // A local array whose elements are native SIMD vectors of `type` (a register tile), or with
  // `lanes` > 0 vectors of that many elements; `size` counts vectors.
  bool vector = false;
  int64_t lanes = 0;
  // cuda: an array in the block's shared memory, which every thread of the block reads (a tile
  // of an operand, `cache`); not initialised. `size` is computable on the host (sizes only).
  bool shared = false;
  // cpu: a list the kernel appends to, whose length is only known once the loops are done (an
  // output's entries listed out of order): it starts empty and grows as stores reach its end,
  // until it is sorted.
  bool growable = false;
};

// With no buffers, a scope: the names its body declares are its own (a statement's body in a
// loop that fuses several, passes/fuse_statements.h).
struct Allocate : StmtNode {
  std::vector<Workspace> buffers;
  Stmt body;
  Allocate(std::vector<Workspace> b, Stmt s) : StmtNode(StmtKind::Allocate), buffers(std::move(b)), body(std::move(s)) {}
};

// Sorts buffer[begin, end) in increasing order (a workspace's list of touched coordinates);
// with `values`, moves values[begin, end) along with their keys (a list of an output's entries).
struct Sort : StmtNode {
  std::string buffer;
  Expr begin, end;
  std::string values;
  Sort(std::string b, Expr x, Expr y, std::string v = "")
      : StmtNode(StmtKind::Sort), buffer(std::move(b)), begin(std::move(x)), end(std::move(y)), values(std::move(v)) {}
};

// callee(args...): a decomposition's executor running one part's kernel (passes/build_executor.h).
struct Call : StmtNode {
  std::string callee;
  std::vector<Expr> args;
  Call(std::string c, std::vector<Expr> a) : StmtNode(StmtKind::Call), callee(std::move(c)), args(std::move(a)) {}
};

// cuda: every thread of the block waits here until all have arrived (__syncthreads), so that
// what some wrote to shared memory is seen by all. Reached equally often by every thread.
struct Barrier : StmtNode {
  Barrier() : StmtNode(StmtKind::Barrier) {}
};

// cpu: a hint that buffer[index] will be read soon (`prefetch`): the cache line holding it is
// fetched now. It never faults and changes no value.
struct Prefetch : StmtNode {
  std::string buffer;
  Expr index;
  Prefetch(std::string b, Expr i) : StmtNode(StmtKind::Prefetch), buffer(std::move(b)), index(std::move(i)) {}
};

// cpu (`batch`): several scalars' partial sums finished at once. Each local array of `buffers`
// holds `lanes` partial sums (a `vectorize` in lanes), and their totals are added into the
// scalars of `targets`, the same order. One transposing tree of vector additions serves them
// all (2 or 4 at a time), where a LaneSum each would end in a horizontal sum each.
struct LaneSums : StmtNode {
  std::vector<std::string> buffers, targets;
  int64_t lanes;
  ScalarType type;
  LaneSums(std::vector<std::string> b, std::vector<std::string> t, int64_t n, ScalarType ty)
      : StmtNode(StmtKind::LaneSums), buffers(std::move(b)), targets(std::move(t)), lanes(n), type(ty) {}
};

struct Comment : StmtNode {
  std::string text;
  explicit Comment(std::string t) : StmtNode(StmtKind::Comment), text(std::move(t)) {}
};

// ---- the kernel ----
enum class ParamKind { Dim, Pos, Crd, Values };

struct Param {
  std::string name;
  ParamKind kind;
  ScalarType type;  // element type for arrays
  bool is_array = false;
  bool is_const = true;
  std::string tensor;     // owning tensor, empty for dims
  int level = -1;         // storage level, for Pos and Crd
  std::string index_var;  // for Dim: the index variable it sizes
  std::string doc;        // one line of prose for the header's ABI comment
  std::string length;     // its length, as prose (e.g. "dim_i + 1"); empty for scalars
};

// ---- a CUDA function's kernels (passes/split_gpu_kernels.h) ----
// An output's list of entries that arrive out of order (lower_to_loops.cpp, list_and_pack): an
// Allocate of growable lists around the loops that append to them, the Sort of the list, and
// the loops that sum its repeats and pack it. On the GPU the loops run twice, first only
// counting the entries (the list's length, which the host reads back to allocate the list),
// then listing them, each thread taking its entry's slot from an atomic cursor; the host sorts
// the list (spgen_sort_entries), and the packing loops (kernels over the grid, scans by one
// block) sum the repeats and pack it.
struct EntryList {
  std::string tensor;
  std::string keys, values;  // values: empty where an assemble phase lists keys only
  ScalarType value_type = ScalarType::Float32;
  // The packing's other arrays (marks and their running sums, the summed entries): one element
  // more than the list, allocated with it, zeroed.
  std::vector<std::pair<std::string, ScalarType>> work;
  std::string count;  // the list's length so far; on the host, once counted, its length
  std::string cursor() const { return "spgen_" + count; }  // device: the next free slot
  std::string spare(const std::string& list) const { return "spgen_" + list + "_spare"; }  // the sort's other half
};

// How a kernel prints an entry list's loops: counting the entries, or listing them.
enum class Listing { None, Count, List };

// One __global__ function: some top-level statements of the nest and how they are launched.
struct GpuKernel {
  std::string name;
  std::vector<Stmt> body;
  std::map<std::string, const For*> bound;  // `bind` annotation → the loop that has it
  std::vector<Param> params;                // those the body uses, in ABI order
  std::vector<Workspace> workspaces;        // its row workspaces, one parameter each after the params
  // An entry list's kernels: its loops counting or listing the entries, or its packing.
  std::shared_ptr<const EntryList> list;
  Listing listing = Listing::None;
  bool packs_list = false;
  bool ends_list = false;  // the list's last packing kernel, after which the host frees it
  std::vector<Param> list_params;  // the list's arrays (and cursor or length), after the params
};

struct LoweredFunc {
  std::string name;
  std::vector<Param> params;
  Stmt body;
  // Size parameters whose value the body assumes (passes/specialize_sizes.h), with that value:
  // the function checks them on entry and returns an error status when one differs.
  std::vector<std::pair<std::string, int64_t>> fixed_sizes;
  bool is_fixed_size(const std::string& param) const;  // `param` is one of fixed_sizes
  // cuda: the __global__ functions the body is launched as, in launch order (split_gpu_kernels).
  std::vector<GpuKernel> gpu_kernels;
};

// ---- construction helpers ----
Expr int64(int64_t value);
Expr var(const std::string& name, ScalarType type = ScalarType::Int64);
Expr load(const std::string& buffer, Expr index, ScalarType type);
Expr binary(BinOp op, Expr a, Expr b);  // result type: Bool for comparisons, else a's type
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr cast(ScalarType type, Expr a);  // no-op when already of that type
Expr select(Expr cond, Expr a, Expr b);
// The number of elements of `type` in one native SIMD vector: a compile-time constant of the
// generated file (SPGEN_LANES_F32, SPGEN_LANES_F64), known to the IR only by name.
Expr vector_lanes(ScalarType type);
Expr logical_and(Expr a, Expr b);  // null operands are "true"
Expr logical_or(Expr a, Expr b);   // null operands are "false"
Stmt block(std::vector<Stmt> stmts);  // flattens nested blocks, drops nulls

// Helpers for passes that look at shapes.
const For* as_for(const Stmt& stmt);
// A statement as a list: a block's statements, or the statement itself.
std::vector<Stmt> statements_of(const Stmt& stmt);
bool is_const_int(const Expr& expr, int64_t value);
bool same_expr(const Expr& a, const Expr& b);  // structural equality
// A masked sum's whole value per lane: its row factor (at `base + lane`) times `value`.
Expr masked_sum_value(const MaskedSum& node);

}  // namespace spgen::loops
