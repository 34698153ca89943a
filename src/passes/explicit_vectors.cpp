#include "passes/explicit_vectors.h"

#include <map>
#include <optional>
#include <set>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

// The widest vector the generated code may use holds this many elements (AVX-512 on the CPU, a
// 16-byte load on the GPU): a tile must be a whole number of vectors on every machine.
int64_t max_lanes(ScalarType type, VectorTarget target) {
  int64_t bytes = target == VectorTarget::Cpu ? 64 : 16;
  return bytes / (type == ScalarType::Float64 ? 8 : 4);
}

std::optional<int64_t> const_int(const Expr& expr) {
  if (expr->kind != ExprKind::IntImm) return std::nullopt;
  return static_cast<const IntImm&>(*expr).value;
}

// Rewrites one loop `for v in [0, T)` (vectorized, no inner loops) to step over vectors.
// Fails (returns null) on anything it cannot express with vectors. On the cpu, an element read
// through an index that varies otherwise from lane to lane (SpMV's x[crd[p]]) is gathered lane
// by lane (`gather_lane`), and an integer that varies so (crd[p]) is computed inside the gather.
class LoopVectorizer {
 public:
  // `fixed`: vectors of that many elements (0: native ones).
  LoopVectorizer(const For& loop, const Workspace& tile, std::string vector_var, std::string lane_var, VectorTarget target,
                 int64_t fixed)
      : loop_(loop), tile_(tile), vector_var_(std::move(vector_var)), lane_var_(std::move(lane_var)), target_(target),
        fixed_(fixed), lanes_(fixed > 0 ? int64(fixed) : vector_lanes(tile.type)), first_lane_(mul(var(vector_var_), lanes_)) {
    strides_[loop.var] = 1;
  }

  Stmt run() {
    std::vector<Stmt> body;
    for (const Stmt& s : statements_of(loop_.body)) {
      Stmt converted = convert(s);
      if (!converted) return nullptr;
      body.push_back(converted);
    }
    if (!wrote_vector_) return nullptr;
    Expr trips = fixed_ > 0 ? int64(static_cast<const IntImm&>(*loop_.end).value / fixed_) : binary(BinOp::Div, loop_.end, lanes_);
    LoopAnnotations annotations;  // explicit vectors: no simd pragma
    return std::make_shared<For>(loop_.label, vector_var_, int64(0), trips, block(std::move(body)), annotations);
  }

 private:
  // How an integer expression changes per iteration of the loop: 0 (invariant), 1 (the next
  // element), another constant, or unknown.
  std::optional<int64_t> stride(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::ThreadCount: return 0;
      case ExprKind::Var: {
        if (lane_lets_.count(static_cast<const Var&>(*e).name)) return std::nullopt;
        auto it = strides_.find(static_cast<const Var&>(*e).name);
        return it == strides_.end() ? 0 : it->second;
      }
      case ExprKind::Load: {
        auto s = stride(static_cast<const Load&>(*e).index);
        if (s && *s == 0 && static_cast<const Load&>(*e).buffer != tile_.name) return 0;
        return std::nullopt;
      }
      case ExprKind::Cast: return stride(static_cast<const Cast&>(*e).a);
      case ExprKind::Neg: {
        auto s = stride(static_cast<const Neg&>(*e).a);
        return s ? std::optional<int64_t>(-*s) : std::nullopt;
      }
      case ExprKind::Binary: {
        const auto& b = static_cast<const Binary&>(*e);
        auto sa = stride(b.a), sb = stride(b.b);
        if (!sa || !sb) return std::nullopt;
        if (b.op == BinOp::Add) return *sa + *sb;
        if (b.op == BinOp::Sub) return *sa - *sb;
        if (*sa == 0 && *sb == 0) return 0;
        if (b.op == BinOp::Mul) {
          if (*sa == 0 && const_int(b.a)) return *const_int(b.a) * *sb;
          if (*sb == 0 && const_int(b.b)) return *sa * *const_int(b.b);
        }
        return std::nullopt;
      }
      case ExprKind::MathFn: {  // (a function of lanes is not expressed as a vector: invariant only)
        auto s = stride(static_cast<const MathFn&>(*e).a);
        return s && *s == 0 ? s : std::nullopt;
      }
      case ExprKind::LaneSum:
      case ExprKind::MaskedSum: return std::nullopt;
      case ExprKind::Select: {
        const auto& s = static_cast<const Select&>(*e);
        auto sc = stride(s.cond), sa = stride(s.a), sb = stride(s.b);
        if (sc && sa && sb && *sc == 0 && *sa == 0 && *sb == 0) return 0;
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // The loop variable becomes the first lane of the current vector.
  Expr first_lane(const Expr& e) const { return substitute(e, {{loop_.var, first_lane_}}); }

  // `e` in lane `lane_var_` of the current vector: the loop variable is the first lane's plus
  // the lane, a strided declaration (already the first lane's) plus its stride times the lane,
  // and a declaration that varies otherwise is its definition, so computed per lane.
  Expr in_lane(const Expr& e) const {
    struct Lane : IRMutator {
      const LoopVectorizer* self;
      Expr mutate_var(const Var& node, const Expr& me) override {
        if (auto let = self->lane_lets_.find(node.name); let != self->lane_lets_.end()) return mutate(let->second);
        const Expr lane = var(self->lane_var_);
        if (node.name == self->loop_.var) return add(self->first_lane_, lane);
        auto it = self->strides_.find(node.name);
        if (it == self->strides_.end() || it->second == 0) return me;
        return add(me, it->second == 1 ? lane : mul(int64(it->second), lane));
      }
    } lane;
    lane.self = this;
    return lane.mutate(e);
  }

  bool is_loop_var(const Expr& e) const {
    return e->kind == ExprKind::Var && static_cast<const Var&>(*e).name == loop_.var;
  }

  // A value expression: `vector` says whether the result is a vector. Null: not expressible.
  Expr value(const Expr& e, bool& vector) const {
    vector = false;
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::ThreadCount: return e;
      case ExprKind::Var: {
        auto s = stride(e);
        return s && *s == 0 ? e : nullptr;
      }
      case ExprKind::Load: {
        const auto& node = static_cast<const Load&>(*e);
        if (node.buffer == tile_.name) {
          if (!is_loop_var(node.index)) return nullptr;
          vector = true;
          return std::make_shared<Load>(node.buffer, var(vector_var_), node.type);
        }
        auto s = stride(node.index);
        if (!s) {
          if (target_ != VectorTarget::Cpu || node.type != tile_.type) return nullptr;
          vector = true;
          return std::make_shared<Load>(node.buffer, in_lane(node.index), node.type, true, lane_var_, fixed_);
        }
        if (*s == 0) return e;
        if (*s != 1 || node.type != tile_.type) return nullptr;
        vector = true;
        return std::make_shared<Load>(node.buffer, first_lane(node.index), node.type, true, "", fixed_);
      }
      case ExprKind::Binary: {
        const auto& b = static_cast<const Binary&>(*e);
        bool va = false, vb = false;
        Expr a = value(b.a, va), c = value(b.b, vb);
        if (!a || !c) return nullptr;
        vector = va || vb;
        bool arithmetic = b.op == BinOp::Add || b.op == BinOp::Sub || b.op == BinOp::Mul || b.op == BinOp::Div;
        if (vector && !arithmetic) return nullptr;
        return a == b.a && c == b.b ? e : std::make_shared<Binary>(b.op, a, c, b.type);
      }
      case ExprKind::Neg: {
        Expr a = value(static_cast<const Neg&>(*e).a, vector);
        return a ? std::make_shared<Neg>(a) : nullptr;
      }
      default: {
        auto s = stride(e);
        return s && *s == 0 ? e : nullptr;
      }
    }
  }

  Stmt convert(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::Declare: {
        const auto& d = static_cast<const Declare&>(*s);
        auto st = stride(d.init);
        if (!st && !d.is_mutable && target_ == VectorTarget::Cpu && (d.type == ScalarType::Int64 || d.type == ScalarType::Int32)) {
          lane_lets_[d.name] = d.init;  // read only inside gathers, computed there per lane
          return block({});
        }
        if (!st || d.is_mutable) return nullptr;
        if (*st != 0) {
          if (d.type != ScalarType::Int64 && d.type != ScalarType::Int32) return nullptr;
          strides_[d.name] = *st;
          return std::make_shared<Declare>(d.name, d.type, first_lane(d.init), false);
        }
        return s;
      }
      case StmtKind::Store: {
        const auto& st = static_cast<const Store&>(*s);
        if (st.atomic || st.vector) return nullptr;
        bool vector = false;
        Expr v = value(st.value, vector);
        if (!v) return nullptr;
        if (st.buffer == tile_.name) {
          // tile[v] += scalar broadcasts; tile[v] = scalar does not.
          if (!is_loop_var(st.index) || (!vector && !st.accumulate)) return nullptr;
          wrote_vector_ = true;
          return std::make_shared<Store>(st.buffer, var(vector_var_), v, st.accumulate);
        }
        auto index_stride = stride(st.index);
        if (!vector || !index_stride || *index_stride != 1 || st.value->type != tile_.type) return nullptr;
        wrote_vector_ = true;
        return std::make_shared<Store>(st.buffer, first_lane(st.index), v, st.accumulate, false, true, fixed_);
      }
      case StmtKind::Comment: return s;
      default: return nullptr;
    }
  }

  const For& loop_;
  const Workspace& tile_;
  std::string vector_var_, lane_var_;
  VectorTarget target_;
  int64_t fixed_;
  Expr lanes_;
  Expr first_lane_;
  std::map<std::string, int64_t> strides_;
  std::map<std::string, Expr> lane_lets_;  // integers that vary from lane to lane, by their definition
  bool wrote_vector_ = false;
};

// The loops that use a workspace, and whether any use lies outside a loop of the tile's shape.
struct TileUses : IRVisitor {
  std::string tile;
  std::vector<const For*> stack;
  std::set<const For*> loops;
  bool stray = false;
  void visit_for(const For& node) override {
    stack.push_back(&node);
    IRVisitor::visit_for(node);
    stack.pop_back();
  }
  void visit_while(const While& node) override {
    stack.push_back(nullptr);
    IRVisitor::visit_while(node);
    stack.pop_back();
  }
  void use() {
    if (stack.empty() || !stack.back()) stray = true;
    else loops.insert(stack.back());
  }
  void visit_load(const Load& node) override {
    if (node.buffer == tile) use();
    IRVisitor::visit_load(node);
  }
  void visit_store(const Store& node) override {
    if (node.buffer == tile) use();
    IRVisitor::visit_store(node);
  }
};

class ExplicitVectors : public IRMutator {
 public:
  ExplicitVectors(std::set<std::string> names, VectorTarget target) : names_(std::move(names)), target_(target) {}

 protected:
  Stmt mutate_allocate(const Allocate& node, const Stmt& self) override {
    Stmt body = mutate(node.body);
    std::vector<Workspace> buffers = node.buffers;
    bool tiled = false;
    for (Workspace& w : buffers) {
      if (!w.local || w.vector || (w.type != ScalarType::Float32 && w.type != ScalarType::Float64)) continue;
      auto size = const_int(w.size);
      if (!size) continue;
      // Whole native vectors; or, on the cpu, one vector of 32 bytes (SpMV's 8 lanes).
      int64_t fixed = 0;
      if (*size % max_lanes(w.type, target_) != 0) {
        if (target_ != VectorTarget::Cpu || *size * (w.type == ScalarType::Float64 ? 8 : 4) != 32) continue;
        fixed = *size;
      }
      std::optional<Stmt> rewritten = vectorize_uses(body, w, *size, fixed);
      if (!rewritten) continue;
      body = *rewritten;
      w.vector = true;
      w.lanes = fixed;
      w.size = fixed > 0 ? int64(1) : binary(BinOp::Div, w.size, vector_lanes(w.type));
      tiled = true;
    }
    if (body == node.body && !tiled) return self;
    return std::make_shared<Allocate>(std::move(buffers), body);
  }

 private:
  std::optional<Stmt> vectorize_uses(const Stmt& body, const Workspace& tile, int64_t size, int64_t fixed) {
    TileUses uses;
    uses.tile = tile.name;
    uses.visit(body);
    if (uses.stray || uses.loops.empty()) return std::nullopt;
    std::map<const For*, Stmt> replacements;
    for (const For* loop : uses.loops) {
      auto trips = const_int(loop->end);
      if (!loop->annotations.vectorized || !is_const_int(loop->begin, 0) || !trips || *trips != size ||
          contains_loop(loop->body))
        return std::nullopt;
      Stmt converted = LoopVectorizer(*loop, tile, fresh(loop->label + "_vec"), fresh("lane"), target_, fixed).run();
      if (!converted) return std::nullopt;
      replacements[loop] = converted;
    }
    struct Replace : IRMutator {
      std::map<const For*, Stmt>* replacements;
      Stmt mutate_for(const For& node, const Stmt& self) override {
        auto it = replacements->find(&node);
        return it != replacements->end() ? it->second : IRMutator::mutate_for(node, self);
      }
    } replace;
    replace.replacements = &replacements;
    return replace.mutate(body);
  }

  std::string fresh(const std::string& wanted) {
    std::string name = wanted;
    for (int suffix = 2; names_.count(name); ++suffix) name = wanted + "_" + std::to_string(suffix);
    names_.insert(name);
    return name;
  }

  std::set<std::string> names_;
  VectorTarget target_;
};

}  // namespace

void use_explicit_vectors(LoweredFunc& func, VectorTarget target) {
  func.body = ExplicitVectors(names_bound_in(func), target).mutate(func.body);
}

}  // namespace spgen
