#include "passes/split_gpu_kernels.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

std::vector<Workspace> row_workspaces(const std::vector<Stmt>& body) {
  struct Collect : IRVisitor {
    std::vector<Workspace> found;
    void visit_allocate(const Allocate& node) override {
      for (const Workspace& w : node.buffers)
        if (!w.local && !w.shared) found.push_back(w);
      IRVisitor::visit_allocate(node);
    }
  } collect;
  for (const Stmt& s : body) collect.visit(s);
  return collect.found;
}

const Allocate* as_entry_list(const Stmt& stmt) {
  if (stmt->kind != StmtKind::Allocate) return nullptr;
  const auto& node = static_cast<const Allocate&>(*stmt);
  return std::any_of(node.buffers.begin(), node.buffers.end(), [](const Workspace& w) { return w.growable; }) ? &node : nullptr;
}

namespace {

GpuKernel kernel_of(std::string name, std::vector<Stmt> body) {
  GpuKernel kernel;
  kernel.name = std::move(name);
  kernel.body = std::move(body);
  return kernel;
}

// The parameters of an entry list's kernel: what it fills or reads of the list.
std::vector<Param> entry_list_params(const EntryList& list, Listing listing) {
  auto scalar = [](const std::string& name) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Dim;
    p.type = ScalarType::Int64;
    return p;
  };
  auto array = [&](const std::string& name, ScalarType type) {
    Param p = scalar(name);
    p.kind = ParamKind::Values;
    p.type = type;
    p.is_array = true;
    p.is_const = false;
    return p;
  };
  std::vector<Param> params;
  if (listing != Listing::Count) {
    params.push_back(array(list.keys, ScalarType::Int64));
    if (!list.values.empty()) params.push_back(array(list.values, list.value_type));
  }
  if (listing == Listing::None)
    for (const auto& [name, type] : list.work) params.push_back(array(name, type));
  if (listing != Listing::None) params.push_back(array(list.cursor(), ScalarType::Int64));
  else params.push_back(scalar(list.count));
  return params;
}

// The variables and arrays a statement reads or stores into.
struct NamesAccessed : IRVisitor {
  std::set<std::string> names;
  void visit_var(const Var& node) override { names.insert(node.name); }
  void visit_load(const Load& node) override {
    names.insert(node.buffer);
    IRVisitor::visit_load(node);
  }
  void visit_store(const Store& node) override {
    names.insert(node.buffer);
    IRVisitor::visit_store(node);
  }
};

// The names a statement reads or writes, scalars assigned included.
struct NamesUsed : NamesAccessed {
  void visit_assign(const Assign& node) override {
    names.insert(node.name);
    IRVisitor::visit_assign(node);
  }
};

// The statements that sort out and pack an entry list, as kernels: each loop bound to the grid
// or a scan, with the comments before it, is a kernel of its own, and the statements between
// them one kernel (one thread). The declarations among them (the list's distinct count, the
// keys' strides, a sequential packing's cursors) are not kernels: each kernel starts with those
// it uses (unused ones would be warnings).
std::vector<std::pair<std::string, std::vector<Stmt>>> packing_kernels(const std::vector<Stmt>& pack) {
  std::vector<Stmt> declares;
  std::vector<std::pair<std::string, std::vector<Stmt>>> groups;
  std::vector<Stmt> current;
  auto flush = [&](const std::string& name) {
    if (std::none_of(current.begin(), current.end(), [](const Stmt& x) { return x->kind != StmtKind::Comment; })) return;
    NamesUsed uses;
    for (const Stmt& s : current) uses.visit(s);
    std::vector<Stmt> used;
    for (size_t k = declares.size(); k-- > 0;) {
      const auto& declare = static_cast<const Declare&>(*declares[k]);
      if (!uses.names.count(declare.name)) continue;
      used.insert(used.begin(), declares[k]);
      uses.visit(declare.init);
    }
    used.insert(used.end(), current.begin(), current.end());
    groups.push_back({name, used});
    current.clear();
  };
  for (const Stmt& s : pack) {
    if (s->kind == StmtKind::Declare) {
      declares.push_back(s);
      continue;
    }
    const For* loop = as_for(s);
    if (!loop || (loop->annotations.bind != "grid" && loop->annotations.bind != "scan")) {
      current.push_back(s);
      continue;
    }
    std::vector<Stmt> comments;  // the ones just before the loop describe it
    while (!current.empty() && current.back()->kind == StmtKind::Comment) {
      comments.insert(comments.begin(), current.back());
      current.pop_back();
    }
    flush("pack_entries");
    current = comments;
    current.push_back(s);
    std::string name = loop->label;
    std::replace(name.begin(), name.end(), ' ', '_');
    flush(name);
  }
  flush("pack_entries");
  return groups;
}

// The statements that list an entry list's entries, as kernels: a nest of its own (a part of a
// sum into the list, lower_to_loops.cpp: listed_parts_nests), spread over the grid, with the
// comments before it, is a kernel of its own; the rest is one kernel. Each starts with the
// declarations before the first nest (the list's length, which every listing kernel steps); the
// first with the comments among them too.
std::vector<std::vector<Stmt>> listing_kernels(const std::vector<Stmt>& loops) {
  std::vector<Stmt> leading;  // the declarations among the comments and declarations that start the loops
  size_t first = 0;
  for (; first < loops.size() && (loops[first]->kind == StmtKind::Declare || loops[first]->kind == StmtKind::Comment); ++first)
    if (loops[first]->kind == StmtKind::Declare) leading.push_back(loops[first]);
  std::vector<std::vector<Stmt>> groups;
  std::vector<Stmt> current;
  auto lists_something = [](const std::vector<Stmt>& stmts) {
    return std::any_of(stmts.begin(), stmts.end(), [](const Stmt& x) { return x->kind != StmtKind::Comment; });
  };
  for (size_t k = first; k < loops.size(); ++k) {
    const For* loop = as_for(loops[k]);
    if (!loop || !loop->annotations.own_kernel) {
      current.push_back(loops[k]);
      continue;
    }
    std::vector<Stmt> comments;  // the ones just before the nest describe it
    while (!current.empty() && current.back()->kind == StmtKind::Comment) {
      comments.insert(comments.begin(), current.back());
      current.pop_back();
    }
    if (lists_something(current)) groups.push_back(current);
    current = comments;
    current.push_back(loops[k]);
    groups.push_back(current);
    current.clear();
  }
  if (lists_something(current) || groups.empty()) groups.push_back(current);
  groups.front().insert(groups.front().begin(), loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(first));
  for (size_t g = 1; g < groups.size(); ++g) groups[g].insert(groups[g].begin(), leading.begin(), leading.end());
  return groups;
}

}  // namespace

void split_gpu_kernels(LoweredFunc& func) {
  std::vector<Stmt> top = statements_of(func.body);
  std::vector<GpuKernel> kernels;
  std::vector<Stmt> statements;  // of the kernel being collected, comments included
  for (const Stmt& s : top) {
    if (const Allocate* lists = as_entry_list(s)) {
      if (!statements.empty()) kernels.push_back(kernel_of(func.name + "_main", std::move(statements)));
      statements.clear();
      std::vector<Stmt> inner = statements_of(lists->body);
      auto sort = std::find_if(inner.begin(), inner.end(), [](const Stmt& x) { return x->kind == StmtKind::Sort; });
      if (sort == inner.end()) throw std::logic_error("cuda: an entry list that is never sorted");
      const auto& sorted = static_cast<const Sort&>(**sort);
      if (sorted.end->kind != ExprKind::Var) throw std::logic_error("cuda: an entry list whose length is not a variable");
      auto list = std::make_shared<EntryList>();
      list->keys = sorted.buffer;
      list->values = sorted.values;
      list->count = static_cast<const Var&>(*sorted.end).name;
      for (const Workspace& w : lists->buffers) {
        if (w.name == list->values) list->value_type = w.type;
        else if (w.name != list->keys) list->work.push_back({w.name, w.type});
      }
      for (const Param& p : func.params)
        if (p.is_array && !p.is_const && list->tensor.empty()) list->tensor = p.tensor;  // the output
      std::vector<Stmt> loops(inner.begin(), sort), pack(sort + 1, inner.end());
      while (!loops.empty() && loops.back()->kind == StmtKind::Comment) {  // they describe the sort and packing
        pack.insert(pack.begin(), loops.back());
        loops.pop_back();
      }
      std::vector<std::vector<Stmt>> groups = listing_kernels(loops);
      for (Listing listing : {Listing::Count, Listing::List})
        for (size_t g = 0; g < groups.size(); ++g) {
          std::string name = func.name + (listing == Listing::Count ? "_count_entries" : "_list_entries");
          GpuKernel kernel = kernel_of(g ? name + "_" + std::to_string(g + 1) : name, groups[g]);
          kernel.list = list;
          kernel.listing = listing;
          kernel.list_params = entry_list_params(*list, listing);
          kernels.push_back(std::move(kernel));
        }
      std::vector<std::pair<std::string, std::vector<Stmt>>> packing = packing_kernels(pack);
      if (packing.empty()) throw std::logic_error("cuda: an entry list that is never packed");
      for (auto& [name, body] : packing) {
        GpuKernel kernel = kernel_of(func.name + "_" + name, std::move(body));
        kernel.list = list;
        kernel.packs_list = true;
        NamesUsed uses;
        for (const Stmt& s : kernel.body) uses.visit(s);
        for (const Param& p : entry_list_params(*list, Listing::None))
          if (uses.names.count(p.name)) kernel.list_params.push_back(p);
        kernels.push_back(std::move(kernel));
      }
      kernels.back().ends_list = true;
      continue;
    }
    const For* loop = as_for(s);
    if (!loop || (loop->annotations.bind != "grid" && loop->annotations.bind != "scan")) {
      statements.push_back(s);
      continue;
    }
    std::vector<Stmt> comments;  // the ones just before the zero fill describe it
    while (!statements.empty() && statements.back()->kind == StmtKind::Comment) {
      comments.insert(comments.begin(), statements.back());
      statements.pop_back();
    }
    if (!statements.empty()) kernels.push_back(kernel_of(func.name + "_main", std::move(statements)));
    std::string name = func.name + "_" + loop->label;
    std::replace(name.begin(), name.end(), ' ', '_');
    comments.push_back(s);
    kernels.push_back(kernel_of(name, comments));
    statements.clear();
  }
  if (!statements.empty()) kernels.push_back(kernel_of(func.name + "_main", statements));

  struct Uses : NamesAccessed {
    std::map<std::string, const For*> bound;
    void visit_for(const For& node) override {
      // A loop over the whole block (a `cache` copy) sizes nothing.
      // The first loop on an index sizes it (a tile's remainder loop, bound alike, comes after).
      if (!node.annotations.bind.empty() && node.annotations.bind != "block") bound.emplace(node.annotations.bind, &node);
      IRVisitor::visit_for(node);
    }
  };
  for (GpuKernel& kernel : kernels) {
    Uses uses;
    for (const Stmt& s : kernel.body) uses.visit(s);
    kernel.bound = uses.bound;
    kernel.workspaces = row_workspaces(kernel.body);
    for (const Param& p : func.params)
      if (uses.names.count(p.name)) kernel.params.push_back(p);
  }
  func.gpu_kernels = std::move(kernels);
}

std::string describe_gpu_kernel(const GpuKernel& kernel) {
  if (kernel.bound.empty()) return "one thread";
  std::string out;
  for (const auto& [bind, loop] : kernel.bound)
    out += (out.empty() ? "" : ", ") +
           (bind == "grid" ? "every thread of the grid" : bind == "scan" ? "one block's threads (a scan)" : bind) + " over " +
           loop->label;
  return out;
}

std::string dump_gpu_kernels(const LoweredFunc& func) {
  std::string out = "// cuda kernels of " + func.name + ", launched in this order:\n";
  for (const GpuKernel& kernel : func.gpu_kernels) {
    std::string role;
    if (kernel.list && kernel.listing == Listing::Count) role = " (counts " + kernel.list->tensor + "'s entries)";
    if (kernel.list && kernel.listing == Listing::List) role = " (lists " + kernel.list->tensor + "'s entries)";
    if (kernel.list && kernel.packs_list) role = " (sorts out and packs " + kernel.list->tensor + "'s list)";
    out += "//   " + kernel.name + ": " + describe_gpu_kernel(kernel) + role + "\n";
  }
  return out;
}

}  // namespace spgen
