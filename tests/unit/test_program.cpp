// Specs of several statements: the rules between statements, the config's temporaries, and what
// the kernel made of them (its ABI, its executor).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "compile_helpers.h"
#include "frontend/parser.h"
#include "frontend/program.h"
#include "ir/loop_ir_printer.h"

using namespace spgen_test;

namespace {

const char* const kAttention =
    "S(i,j) = M(i,j) * Q(i,k) * K(j,k)\n"
    "m(i) = max(j: S(i,j))\n"
    "E(i,j) = exp(S(i,j) - m(i))\n"
    "l(i) = E(i,j)\n"
    "O(i,d) = E(i,j) * V(j,d) / l(i)\n";
const char* const kAttentionConfig =
    R"({"tensors": {"M": {"format": "csr"}, "S": {"temporary": true}, "m": {"temporary": true},
                    "E": {"structure": "S", "temporary": true}, "l": {"temporary": true}}})";

}  // namespace

TEST_CASE("several statements: errors between statements point at the access") {
  CHECK(error_of("y(i) = t(i)\nt(i) = x(i)\n", "{}") ==
        "t.spg:1:8: error: t is read here before the statement that writes it (at line 2, column 1): a statement reads only what "
        "earlier statements wrote\n  y(i) = t(i)\n         ^\n");
  CHECK(contains(error_of("t(i) = x(i)\nt(i) = w(i)\n", "{}"),
                 "t.spg:2:1: error: t is already written by the statement at line 1, column 1: a tensor is written once"));
  CHECK(contains(error_of("t(i) = x(i)\ny(i) += t(i)\n", "{}"),
                 "t.spg:2:1: error: `+=` into y, which no earlier statement writes: in a spec of several statements, `+=` adds into "
                 "what an earlier statement wrote with `=`"));
  CHECK(contains(error_of("y(i) += x(i) / sum(j: A(i,j))", "{}"),
                 "t.spg:1:1: error: `+=` into y, which no earlier statement writes (a reduction inside an expression is a statement of its own)"));
  // `+=` into what an earlier statement wrote adds into it (tests/e2e/statements/sum_into.spg); not
  // into an output on another's structure.
  const spgen::Compilation added = compile("t(i) = A(i,j) * x(j)\nt(i) += B(i,j) * x(j)\ny(i) = t(i) * t(i)\n", R"({"tensors": {"t": {"temporary": true}}})");
  CHECK(added.parts.size() == 3);
  REQUIRE(added.temporaries.size() == 1);
  CHECK(added.temporaries[0] == "t: temporary, written by statement 1, added into by statement 2 and held by the kernel: dense, one value per "
                                "coordinate of (i)");
  CHECK(contains(error_of("S(i,j) = A(i,j) * x(j)\nS(i,j) += A(i,j) * z(j)\n",
                          R"({"tensors": {"A": {"format": "csr"}, "S": {"structure": "A"}}})"),
                 "an output with a structure is written with `=`, not `+=`"));
  CHECK(contains(error_of("t(i) = x(i)\ny(i) = t(i,j) * z(j)\n", "{}"),
                 "t.spg:2:8: error: tensor t is used with 2 indices here but with 1 at line 1, column 1"));
  CHECK(contains(error_of("t(i) = x(i)\ny(j) = t(j) * i(j)\n", "{}"), "'i' is used both as a tensor and as an index variable"));
}

TEST_CASE("several statements: the config's temporaries and what it may not give yet") {
  const char* spec = "t(i) = A(i,j) * x(j)\ny(i) = A(i,j) * t(j)\n";
  CHECK(error_of(spec, R"({"tensors": {"y": {"temporary": true}}})") ==
        "c.json: /tensors/y/temporary: error: no statement reads the temporary y: the kernel would compute it for nothing (make it an "
        "output, or drop its statement)\n");
  CHECK(error_of(spec, R"({"tensors": {"x": {"temporary": true}}})") ==
        "c.json: /tensors/x/temporary: error: x is an input: only a tensor that a statement writes can be temporary\n");
  CHECK(error_of(spec, R"({"tensors": {"t": {"temporary": 1}}})") ==
        "c.json: /tensors/t/temporary: error: expected true or false, found number\n");
  CHECK(contains(error_of(spec, R"({"tensors": {"Z": {"format": "csr"}}})"),
                 "c.json: /tensors/Z: error: tensor Z does not appear in the spec (its tensors are: A, x, t, y)"));
  CHECK(contains(error_of(spec, R"({"schedule": [{"op": "parallel", "var": "i"}]})"),
                 "c.json: /schedule: error: a spec of several statements takes a schedule per statement"));
  CHECK(contains(error_of(spec, R"({"schedule": {"3": "auto"}})"), "c.json: /schedule/3: error: expected a statement's number, 1 to 2"));
  // A statement's ops are named by their place in the config as written.
  CHECK(contains(error_of(spec, R"({"tensors": {"A": {"format": "csr"}}, "schedule": {"2": [{"op": "parallel", "var": "i"}, {"op": "vectorize", "var": "q"}]}})"),
                 "c.json: /schedule/2/1: error: vectorize: no loop named q"));
  CHECK(contains(error_of(spec, R"({"schedule": {"1": [{"op": "parallel"}]}})"), "c.json: /schedule/1/0: error:"));
  CHECK(contains(error_of(spec, R"({"specialize": {"i": [4]}})"), "c.json: /specialize: error:"));
  CHECK(contains(error_of(spec, R"({"variants": []})"), "c.json: /variants: error:"));
  // i and j index t's one mode: one size.
  CHECK(contains(error_of(spec, R"({"sizes": {"i": 4, "j": 5}})"),
                 "j and i index the same mode of a tensor, so they have one size, but 5 and 4 are given"));
  // A one-statement spec has no temporaries either.
  CHECK(contains(error_of("y(i) = A(i,j) * x(j)", R"({"tensors": {"y": {"temporary": true}}})"), "no statement reads the temporary y"));
  // A statement that would build a sparse output's structure.
  CHECK(contains(error_of("C(i,j) = A(i,j) + B(i,j)\ny(i) = C(i,j) * x(j)\n",
                          R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}}})"),
                 "t.spg:1:1: error: this statement builds the structure of its sparse output C (csr), which a spec of several statements "
                 "does not do yet"));
}

TEST_CASE("several statements: the ABI holds every tensor but the temporaries, and the executor holds those") {
  const spgen::Compilation c = compile(kAttention, kAttentionConfig);
  std::vector<std::string> params;
  for (const spgen::loops::Param& p : c.func.params) params.push_back(p.name);
  CHECK(params == std::vector<std::string>{"dim_i", "dim_j", "dim_k", "dim_d", "O_vals", "M_pos1", "M_crd1", "M_vals", "Q_vals", "K_vals",
                                           "V_vals"});
  REQUIRE(c.parts.size() == 5);
  CHECK(c.parts[0].name == "t_s1");
  CHECK(c.parts[4].name == "t_s5");
  const std::string executor = spgen::loops::dump_stage2(c.func);
  // S and E share M's structure: M's entry count sizes them, and their statements read M's arrays.
  CHECK(contains(executor, "S_vals"));
  CHECK(contains(executor, "M_pos1[dim_i]"));
  CHECK(c.written_formats.at("E").name == "csr");
  CHECK(c.written_formats.at("m").all_dense());
  CHECK(c.temporaries.size() == 4);
  CHECK(c.statements.size() == 5);
  CHECK(contains(c.stage1_dump, "// statement 3: E(i,j) = exp(S(i,j) - m(i))"));
}

TEST_CASE("several statements: a schedule per statement") {
  const spgen::Compilation c = compile("t(i) = A(i,j) * x(j)\ny(i) = A(i,j) * t(j)\n",
                                       R"({"tensors": {"A": {"format": "csr"}, "t": {"temporary": true}},
                                           "schedule": {"2": [{"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 64}]}})");
  REQUIRE(c.statement_schedules.size() == 2);
  CHECK(c.statement_schedules[0].empty());
  REQUIRE(c.statement_schedules[1].size() == 1);
  CHECK(c.statement_schedules[1][0].path == "/schedule/2/0");
  CHECK(contains(spgen::loops::dump_stage2(c.parts[1]), "parallel(dynamic, 64)"));
  CHECK(!contains(spgen::loops::dump_stage2(c.parts[0]), "parallel"));
}

TEST_CASE("several statements: index variables of one tensor mode share a size") {
  const spgen::Compilation c = compile("t(i) = A(i,j) * x(j)\ny(i) = A(i,j) * t(j)\n", R"({"tensors": {"A": {"format": "csr"}, "t": {"temporary": true}}})");
  CHECK(c.program.index_vars == std::vector<std::string>{"i"});
  CHECK(c.program.size_var("j") == "i");
  // The executor passes dim_i where a statement takes dim_j.
  const std::string executor = spgen::loops::dump_stage2(c.func);
  CHECK(!contains(executor, "dim_j"));
}

TEST_CASE("several statements with \"fuse\": those that share their row loop run in one loop; without, each its own") {
  const std::string auto_config =
      R"({"tensors": {"M": {"format": "csr"}, "S": {"temporary": true}, "m": {"temporary": true},
                      "E": {"structure": "S", "temporary": true}, "l": {"temporary": true}}, "schedule": "auto")";
  const spgen::Compilation fused = compile(kAttention, auto_config + R"(, "fuse": true})");
  // One fused kernel, the generic one, and one per width of k = d (auto's kernels per size), chosen
  // by the entry point t_s1_5.
  REQUIRE(fused.parts.size() == 6);
  CHECK(fused.parts[0].name == "t_s1_5_k16_d16");
  CHECK(fused.parts[1].name == "t_s1_5_k32_d32");
  CHECK(fused.parts[4].name == "t_s1_5_generic");
  CHECK(fused.parts[5].name == "t_s1_5");
  CHECK(contains(spgen::loops::dump_stage2(fused.parts[5]), "if dim_k == 32 && dim_d == 32:"));
  for (size_t k = 0; k < 5; ++k) {
    const std::string kernel = spgen::loops::dump_stage2(fused.parts[k]);
    CHECK(kernel.find("for i in [0, dim_i) parallel") == kernel.rfind("for i in [0, dim_i)"));  // one row loop
  }
  CHECK(contains(fused.stage2_dump, "// statements 1-5 fused: one loop over i, each row computing them in turn; m, l held in a register "
                                    "per row; S, E held a row at a time"));
  CHECK(contains(fused.stage2_dump, "// the fused kernel for k = d = 64"));
  // S and E, written and read by the fused statements alone, live a row at a time in a workspace
  // per thread, m and l in a scalar of the row; the executor allocates none of them.
  for (size_t k = 0; k < 5; ++k) {
    const std::string kernel = spgen::loops::dump_stage2(fused.parts[k]);
    CAPTURE(kernel);
    CHECK(contains(kernel, "allocate S_row: float32[longest_row + 128], E_row: float32[longest_row + 128]:"));
    CHECK(contains(kernel, "S_row[pM1 - M_row_start] = M_vals[pM1] * acc"));
    // (S and E lie on M's structure: one first position of the row for both.)
    CHECK(contains(kernel, "let M_row_start: int64 = int64(M_pos1[i])"));
    CHECK(!contains(kernel, "E_row_start"));
    CHECK(contains(kernel, "var m_of_row: float32 = 0"));
    CHECK(contains(kernel, "m_of_row = acc"));
    CHECK(contains(kernel, "let l_recip: float32 = 1 / l_of_row"));
    for (const char* array : {"S_vals", "E_vals", "m_vals", "l_vals"}) CHECK(!contains(kernel, array));
  }
  const std::string executor = spgen::loops::dump_stage2(fused.func);
  CHECK(!contains(executor, "allocate"));
  CHECK(!contains(executor, "S_vals"));
  REQUIRE(fused.temporaries.size() == 4);
  CHECK(fused.temporaries[0] == "S: temporary, written by statement 1 and held by the kernel: a row at a time, in a workspace per thread "
                                "as long as the longest row of M (its statements fused)");
  CHECK(fused.temporaries[1] == "m: temporary, written by statement 2 and held by the kernel: one value per row, in a register of the "
                                "fused row loop (its statements fused)");
  REQUIRE(fused.statement_notes.size() == 2);
  CHECK(fused.statement_notes[1] ==
        "  k = d: a fused kernel for each of 16, 32, 64 and 128 (constant trip counts), chosen on entry; any other sizes run the generic one");

  const spgen::Compilation apart = compile(kAttention, auto_config + "}");
  // Each statement a kernel of its own; the dot product over k and the register tile over d each
  // with `auto`'s kernels per feature width (constant trip counts), chosen by the statement's entry point.
  std::set<std::string> names;
  for (const spgen::loops::LoweredFunc& part : apart.parts) names.insert(part.name);
  for (const char* name : {"t_s1", "t_s2", "t_s3", "t_s4", "t_s5", "t_s1_k32", "t_s1_generic", "t_s5_d32", "t_s5_generic"})
    CHECK(names.count(name));
  CHECK(apart.parts.size() == 15);
  for (const spgen::loops::LoweredFunc& part : apart.parts)
    if (part.name == "t_s1") CHECK(contains(spgen::loops::dump_stage2(part), "call t_s1_k32("));
  CHECK(std::find(apart.statement_notes.begin(), apart.statement_notes.end(),
                  "statement 1, k: a kernel for each of 16, 32, 64 and 128 (constant trip counts), chosen on entry by dim_k;") !=
        apart.statement_notes.end());
  // t is read at other rows (t(j)): its reader cannot run in its writer's loop.
  const spgen::Compilation hops = compile("t(i) = A(i,j) * x(j)\ny(i) = A(i,j) * t(j)\n",
                                          R"({"tensors": {"A": {"format": "csr"}, "t": {"temporary": true}}, "schedule": "auto", "fuse": true})");
  CHECK(hops.parts.size() == 2);
  // A scalar reduction over the rows is no row of its own: its reader waits for the whole sum.
  const spgen::Compilation norm = compile("n = x(i) * x(i)\ny(i) = x(i) / sqrt(n)\n", R"({"tensors": {"n": {"temporary": true}}, "schedule": "auto", "fuse": true})");
  CHECK(norm.parts.size() == 2);
  CHECK(contains(error_of("y(i) = x(i)", R"({"fuse": true})"), "c.json: /fuse: error: \"fuse\" belongs to a spec of several statements"));
}

namespace {

spgen::Compilation compile_with_stats(const std::string& spec, const std::string& config, const std::vector<int64_t>& dims, int64_t nnz) {
  spgen::CompileInput input{"t.spg", spec, "c.json", config, std::nullopt, {}};
  input.stats_files = {{"A", "a.tns"}};
  input.read_stats = [dims, nnz](const std::string&) {
    spgen::InputStats stats;
    stats.dims = dims;
    stats.nnz = nnz;
    return stats;
  };
  return spgen::compile(input);
}

}  // namespace

TEST_CASE("auto factors a product of a sparse and two dense operands where its statistics say two statements cost less") {
  const char* rgcn = "Y(i,l) = A(r,i,j) * X(j,k) * W(r,k,l)";
  const std::string config = R"({"tensors": {"A": {"format": "csf"}}, "schedule": "auto"})";
  // 10 entries per (relation, node): nnz K L = 40000 * 1024 against nnz K + R N K L = 40000 * 32 + 4000 * 1024.
  const spgen::Compilation factored = compile_with_stats(rgcn, config, {4, 1000, 1000}, 40000);
  REQUIRE(factored.statements.size() == 2);
  CHECK(factored.statements[0] == "T(r,i,k) = A(r,i,j) * X(j,k)");
  CHECK(factored.statements[1] == "Y(i,l) = T(r,i,k) * W(r,k,l)");
  CHECK(contains(factored.statement_notes.front(), "auto factored the product"));
  CHECK(factored.program.spec_text == "Y(i,l) = A(r,i,j) * X(j,k) * W(r,k,l)");
  // The kernel's ABI is the one nest's.
  const spgen::Compilation single = compile(rgcn, config);
  CHECK(single.statements.empty());
  std::vector<std::string> a, b;
  for (const spgen::loops::Param& p : factored.func.params) a.push_back(p.name + (p.is_const ? "" : " mut"));
  for (const spgen::loops::Param& p : single.func.params) b.push_back(p.name + (p.is_const ? "" : " mut"));
  CHECK(a == b);
  // A tenth of an entry per (relation, node): the dense temporary would cost more.
  CHECK(compile_with_stats(rgcn, config, {4, 1000, 1000}, 400).statements.empty());
  // MTTKRP: either temporary is as large as the work it saves.
  CHECK(compile_with_stats("Y(i,j) = A(i,k,l) * C(k,j) * D(l,j)", config, {1000, 100, 100}, 40000).statements.empty());
  // "factor" asks for it without statistics, or forbids it.
  CHECK(compile(rgcn, R"({"tensors": {"A": {"format": "csf"}}, "schedule": "auto", "factor": true})").statements.size() == 2);
  CHECK(compile_with_stats(rgcn, R"({"tensors": {"A": {"format": "csf"}}, "schedule": "auto", "factor": false})", {4, 1000, 1000}, 40000)
            .statements.empty());
  CHECK(contains(error_of(rgcn, R"({"factor": 1})"), "c.json: /factor: error: expected true or false, found number"));
  CHECK(contains(error_of("t(i) = x(i)\ny(i) = t(i)\n", R"({"factor": true})"), "c.json: /factor: error: \"factor\" rewrites a spec of one statement"));
  // Two sparse operands and a dense one: one nest walks B's row for every entry of A; B x first is
  // one SpMV, then another (4 entries per row: 4000 * 4 against 4000 + 4000).
  spgen::CompileInput chain{"t.spg", "y(i) = A(i,j) * B(j,k) * x(k)", "c.json",
                            R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}, "schedule": "auto"})", std::nullopt, {}};
  chain.stats_files = {{"A", "a.mtx"}, {"B", "b.mtx"}};
  chain.read_stats = [](const std::string&) {
    spgen::InputStats stats;
    stats.dims = {1000, 1000};
    stats.nnz = 4000;
    return stats;
  };
  const spgen::Compilation walks = spgen::compile(chain);
  REQUIRE(walks.statements.size() == 2);
  CHECK(walks.statements[0] == "T(j) = B(j,k) * x(k)");
  CHECK(walks.statements[1] == "y(i) = T(j) * A(i,j)");
  // A schedule of ops is the user's: nothing is rewritten.
  CHECK(compile_with_stats(rgcn, R"({"tensors": {"A": {"format": "csf"}}, "schedule": []})", {4, 1000, 1000}, 40000).statements.empty());
  // Four operands: every order of contracting pairs is costed; a chain of three sparse matrices and
  // a vector is cheapest as three SpMVs from the vector's end.
  chain.spec_text = "y(i) = A(i,j) * B(j,k) * C(k,l) * x(l)";
  chain.config_text = R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}}, "schedule": "auto"})";
  chain.stats_files = {{"A", "a.mtx"}, {"B", "b.mtx"}, {"C", "c.mtx"}};
  const spgen::Compilation three = spgen::compile(chain);
  CHECK(three.statements == std::vector<std::string>{"T(k) = C(k,l) * x(l)", "T2(j) = T(k) * B(j,k)", "y(i) = T2(j) * A(i,j)"});
  CHECK(contains(three.statement_notes.front(), "one nest visits 6.4e+04 points; T(k), then T2(j) first visit 1.2e+04 in all"));
  // One tensor with other indices: one nest refuses it, saying how to write it; auto's statements
  // read it once each.
  const char* hops = "y(i) = A(i,j) * A(j,k) * A(k,l) * x(l)";
  CHECK(contains(error_of(hops, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})"),
                 "one tensor must be accessed with the same indices throughout a statement (a product such as A(i,j) * A(j,k) * x(k) runs as "
                 "statements, each contracting a pair into a temporary: write them, or let `auto` do it, \"factor\": true)"));
  CHECK(compile(hops, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto", "factor": true})").statements ==
        std::vector<std::string>{"T(k) = A(k,l) * x(l)", "T2(j) = T(k) * A(j,k)", "y(i) = T2(j) * A(i,j)"});
  // More than six operands: not searched.
  CHECK(compile("y(i) = A(i,j) * B(j,k) * C(k,l) * D(l,m) * E(m,n) * F(n,o) * x(o)",
                R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto", "factor": true})")
            .statements.empty());
}

TEST_CASE("several statements: a statistics file is read once, however many statements read its tensor") {
  int reads = 0;
  spgen::CompileInput input{"t.spg", kAttention, "c.json", std::string(kAttentionConfig), std::nullopt, {}};
  input.stats_files = {{"M", "m.mtx"}};
  input.read_stats = [&reads](const std::string&) {
    ++reads;
    spgen::InputStats stats;
    stats.dims = {100, 100};
    stats.nnz = 500;
    return stats;
  };
  spgen::compile(input);
  CHECK(reads == 1);
  // A statement auto factors reuses what the statement was read with.
  reads = 0;
  input.spec_text = "Y(i,l) = M(r,i,j) * X(j,k) * W(r,k,l)";
  input.config_text = R"({"tensors": {"M": {"format": "csf"}}, "schedule": "auto"})";
  input.read_stats = [&reads](const std::string&) {
    ++reads;
    spgen::InputStats stats;
    stats.dims = {4, 1000, 1000};
    stats.nnz = 40000;
    return stats;
  };
  CHECK(spgen::compile(input).statements.size() == 2);
  CHECK(reads == 1);
}

TEST_CASE("auto schedules a statement that reads a temporary on an input's structure with that input's statistics") {
  spgen::CompileInput input{"t.spg", "S(i,j) = A(i,j) * exp(x(j))\nm(i) = max(j: S(i,j))\n", "c.json",
                            R"({"tensors": {"A": {"format": "csr"}, "S": {"structure": "A", "temporary": true}}, "schedule": "auto"})",
                            std::nullopt, {}};
  input.stats_files = {{"A", "a.mtx"}};
  input.read_stats = [](const std::string&) {
    spgen::InputStats stats;
    stats.source = "a.mtx";
    stats.dims = {1000, 1000};
    stats.nnz = 4000;
    stats.row_mean = 4;
    stats.static_split_imbalance = 1.1;
    return stats;
  };
  const spgen::Compilation c = spgen::compile(input);
  REQUIRE(c.statement_schedules.size() == 2);
  std::string reasons;
  for (const spgen::ScheduleOp& op : c.statement_schedules[1]) reasons += op.reason + "\n";
  CAPTURE(reasons);
  CHECK(contains(reasons, "S's rows"));  // S's statistics are A's: the same rows
  // The header's statistics are the kernel's inputs' only.
  CHECK(c.config.stats.size() == 1);
  CHECK(c.config.stats.count("A"));
}

TEST_CASE("several statements: \"specialize\" gives kernels per size to the statements with a variable of its class") {
  const std::string config = std::string(kAttentionConfig).substr(0, std::string(kAttentionConfig).size() - 1);
  const spgen::Compilation c = compile(kAttention, config + R"(, "schedule": "auto", "specialize": {"k": [32, 64]}})");
  std::set<std::string> names;
  for (const spgen::loops::LoweredFunc& part : c.parts) names.insert(part.name);
  CHECK(names.count("t_s1_k32"));
  CHECK(names.count("t_s1_k64"));
  CHECK_FALSE(names.count("t_s1_k16"));  // the sizes given, not auto's
  CHECK(names.count("t_s5_d16"));        // a statement without k keeps auto's
  CHECK(contains(error_of(kAttention, config + R"(, "specialize": {"q": [3]}})"),
                 "c.json: /specialize/q: error: no index variable q in the spec (its index variables are: d, i, j, k)"));
  CHECK(contains(error_of(kAttention, config + R"(, "fuse": true, "specialize": {"k": [32]}})"),
                 "c.json: /specialize: error: \"specialize\" compiles a statement's loops again per size, which fused statements share"));
}

TEST_CASE("auto fuses statements whose row-held temporaries would fill a quarter of the L2 apart") {
  const std::string config = std::string(kAttentionConfig).substr(0, std::string(kAttentionConfig).size() - 1) + R"(, "schedule": "auto")";
  auto with_entries = [&](int64_t nnz, const std::string& extra) {
    spgen::CompileInput input{"t.spg", kAttention, "c.json", config + extra + "}", std::nullopt, {}};
    input.stats_files = {{"M", "m.mtx"}};
    input.read_stats = [nnz](const std::string&) {
      spgen::InputStats stats;
      stats.source = "m.mtx";
      stats.dims = {20000, 20000};
      stats.nnz = nnz;
      stats.row_mean = static_cast<double>(nnz) / 20000;
      return stats;
    };
    return spgen::compile(input);
  };
  auto fused = [](const spgen::Compilation& c) {
    return std::any_of(c.statement_notes.begin(), c.statement_notes.end(), [](const std::string& note) { return contains(note, "fused"); });
  };
  // 90000 entries: S and E hold 703 KiB apart (float32).
  const spgen::Compilation big = with_entries(90000, "");
  CHECK(fused(big));
  CHECK(contains(big.statement_notes.front(), "auto: statements 1-5 fused: one loop over i, each row computing them in turn (its "
                                              "temporaries S, E hold 703 KiB apart, over a quarter of a 1 MiB L2); m, l held in a register per row; "
                                              "S, E held a row at a time"));
  // 10000 entries stay in the cache apart; so does what no statistics describe; "fuse" decides where given.
  CHECK_FALSE(fused(with_entries(10000, "")));
  CHECK_FALSE(fused(compile(kAttention, config + "}")));
  CHECK_FALSE(fused(with_entries(90000, R"(, "fuse": false)")));
  CHECK(fused(with_entries(10000, R"(, "fuse": true)")));
  // Statements that run alone keep auto's kernels per width.
  std::set<std::string> names;
  for (const spgen::loops::LoweredFunc& part : with_entries(10000, "").parts) names.insert(part.name);
  CHECK(names.count("t_s1_k32"));
}
