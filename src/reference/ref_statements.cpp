#include "ref_statements.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include "ref_structure.h"
#include "reference.h"

namespace spgen_ref {

namespace {

std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t\r"), last = s.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string() : s.substr(first, last + 1 - first);
}

// The name before the first '(' or '=' of a statement: its output.
std::string output_of(const std::string& statement) {
    const size_t end = statement.find_first_of("(=+");
    return trimmed(statement.substr(0, end));
}

// `t`'s entries at coordinates `structure` stores: the evaluation may reach others, with 0 (a
// product's explicit zeros), which a later statement would take for stored entries.
Tensor on_coordinates_of(const Tensor& t, const Tensor& structure) {
    const size_t order = t.dims.size();
    std::set<std::vector<int64_t>> stored;
    for (size_t e = 0; e < structure.nnz(); ++e)
        stored.emplace(structure.coords.begin() + static_cast<std::ptrdiff_t>(e * order),
                       structure.coords.begin() + static_cast<std::ptrdiff_t>((e + 1) * order));
    Tensor out{t.dims, {}, {}};
    for (size_t e = 0; e < t.nnz(); ++e) {
        const std::vector<int64_t> at(t.coords.begin() + static_cast<std::ptrdiff_t>(e * order),
                                      t.coords.begin() + static_cast<std::ptrdiff_t>((e + 1) * order));
        if (!stored.count(at)) continue;
        out.coords.insert(out.coords.end(), at.begin(), at.end());
        out.vals.push_back(t.vals[e]);
    }
    return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where the reduction `max(j, k: ...` starting at `at` (its name) lists its variables: the
// position after its ':', and the variables; 0 where `at` starts no reduction.
size_t reduction_body(const std::string& text, size_t at, std::vector<std::string>& vars) {
    size_t p = at;
    while (p < text.size() && ident_char(text[p])) ++p;
    const std::string name = text.substr(at, p - at);
    if (name != "max" && name != "min" && name != "sum") return 0;
    if (at > 0 && ident_char(text[at - 1])) return 0;
    auto skip = [&] { while (p < text.size() && text[p] == ' ') ++p; };
    skip();
    if (p >= text.size() || text[p] != '(') return 0;
    ++p;
    vars.clear();
    for (;;) {
        skip();
        const size_t start = p;
        while (p < text.size() && ident_char(text[p])) ++p;
        if (p == start) return 0;
        vars.push_back(text.substr(start, p - start));
        skip();
        if (p < text.size() && text[p] == ':') return p + 1;
        if (p >= text.size() || text[p] != ',') return 0;
        ++p;
    }
}

// The index variables of the accesses in `text` (a name followed by '(' that is no function of
// the language is an access), in order of appearance.
std::vector<std::string> access_vars(const std::string& text) {
    static const std::set<std::string> functions = {"exp", "log", "sqrt", "abs", "max", "min", "sum"};
    std::vector<std::string> vars;
    for (size_t p = 0; p < text.size();) {
        if (!ident_char(text[p]) || std::isdigit(static_cast<unsigned char>(text[p]))) {
            ++p;
            continue;
        }
        size_t end = p;
        while (end < text.size() && ident_char(text[end])) ++end;
        const std::string name = text.substr(p, end - p);
        size_t q = end;
        while (q < text.size() && text[q] == ' ') ++q;
        p = end;
        if (q >= text.size() || text[q] != '(' || functions.count(name)) continue;
        const size_t close = text.find(')', q);
        std::string list = text.substr(q + 1, close - q - 1);
        for (size_t a = 0; a < list.size();) {
            while (a < list.size() && !ident_char(list[a])) ++a;
            size_t b = a;
            while (b < list.size() && ident_char(list[b])) ++b;
            if (b > a && std::find(vars.begin(), vars.end(), list.substr(a, b - a)) == vars.end()) vars.push_back(list.substr(a, b - a));
            a = b;
        }
        p = close;
    }
    return vars;
}

// The statement with each reduction inside its right-hand side (not the whole of it) moved into a
// statement of its own before it, innermost first, into a dense temporary over the indices of its
// expression that it does not reduce; `lifted` receives those statements and `names` the
// temporaries.
std::string lift_reductions(std::string statement, std::vector<std::string>& lifted, std::vector<std::string>& names) {
    const size_t assign = statement.find('=');
    for (;;) {
        // The innermost: a reduction whose body holds no other.
        size_t found = std::string::npos, body = 0, close = 0;
        std::vector<std::string> vars, found_vars;
        for (size_t at = assign + 1; at < statement.size(); ++at) {
            const size_t b = reduction_body(statement, at, vars);
            if (!b) continue;
            int depth = 1;
            size_t c = b;
            for (; c < statement.size() && depth > 0; ++c) depth += statement[c] == '(' ? 1 : statement[c] == ')' ? -1 : 0;
            found = at, body = b, close = c, found_vars = vars;  // (later ones are inside or after it)
        }
        if (found == std::string::npos) return statement;
        const std::string rhs_before = trimmed(statement.substr(assign + 1, found - assign - 1));
        const std::string rhs_after = trimmed(statement.substr(close));
        if (rhs_before.empty() && rhs_after.empty()) return statement;  // the whole right-hand side: evaluate's own
        std::vector<std::string> free;
        for (const std::string& v : access_vars(statement.substr(body, close - 1 - body)))
            if (std::find(found_vars.begin(), found_vars.end(), v) == found_vars.end()) free.push_back(v);
        std::string access = "ref_reduction_" + std::to_string(names.size() + 1) + "(";
        for (size_t m = 0; m < free.size(); ++m) access += (m ? "," : "") + free[m];
        access += ")";
        names.push_back(access.substr(0, access.find('(')));
        lifted.push_back(access + " = " + statement.substr(found, close - found));
        statement = statement.substr(0, found) + access + statement.substr(close);
    }
}

}  // namespace

std::vector<std::string> split_statements(const std::string& spec_text) {
    std::vector<std::string> statements;
    std::string line;
    auto take_line = [&] {
        const size_t comment = line.find('#');
        std::string code = comment == std::string::npos ? line : line.substr(0, comment);
        line.clear();
        size_t start = 0;
        for (;;) {
            const size_t semicolon = code.find(';', start);
            std::string piece = trimmed(code.substr(start, semicolon == std::string::npos ? std::string::npos : semicolon - start));
            if (!piece.empty()) {
                if (piece.find('=') == std::string::npos && !statements.empty() && start == 0) statements.back() += " " + piece;
                else statements.push_back(piece);
            }
            if (semicolon == std::string::npos) break;
            start = semicolon + 1;
        }
    };
    for (char c : spec_text) {
        if (c == '\n') take_line();
        else line += c;
    }
    take_line();
    return statements;
}

Tensor densified(const Tensor& t) {
    const Tensor sorted = canonical(t);
    Tensor out;
    out.dims = t.dims;
    int64_t count = 1;
    for (int64_t d : t.dims) count *= d;
    out.vals.assign(static_cast<size_t>(count), 0.0);
    const size_t order = t.dims.size();
    for (size_t e = 0; e < sorted.nnz(); ++e) {
        int64_t at = 0;
        for (size_t m = 0; m < order; ++m) at = at * t.dims[m] + sorted.coords[e * order + m];
        out.vals[static_cast<size_t>(at)] += sorted.vals[e];
    }
    out.coords.resize(static_cast<size_t>(count) * order);
    for (int64_t at = 0; at < count; ++at) {
        int64_t rest = at;
        for (size_t m = order; m-- > 0;) {
            out.coords[static_cast<size_t>(at) * order + m] = rest % t.dims[m];
            rest /= t.dims[m];
        }
    }
    return out;
}

std::map<std::string, Tensor> evaluate_statements(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                                                  const std::map<std::string, StoredAs>& stored,
                                                  const std::map<std::string, int64_t>& extra_dims) {
    std::map<std::string, Tensor> known = inputs, outputs;
    std::vector<std::string> statements, lifted_names;
    for (const std::string& written : split_statements(spec_text)) {
        std::vector<std::string> lifted;
        const std::string statement = lift_reductions(written, lifted, lifted_names);
        statements.insert(statements.end(), lifted.begin(), lifted.end());
        statements.push_back(statement);
    }
    std::map<std::string, StoredAs> how_stored = stored;
    for (const std::string& name : lifted_names) how_stored[name].dense = true;
    for (const std::string& statement : statements) {
        const std::string output = output_of(statement);
        auto how = how_stored.find(output);
        std::map<std::string, Tensor> operands = known;
        std::string text = statement;
        try {
            if (how != how_stored.end()) text = on_entries_of(statement, how->second.structure, operands);
            // `+=` adds into what an earlier statement wrote.
            const size_t assign = statement.find('=');
            const bool adds = assign != std::string::npos && assign > 0 && statement[assign - 1] == '+';
            auto earlier = known.find(output);
            Tensor result = evaluate(text, operands, extra_dims, adds && earlier != known.end() ? &earlier->second : nullptr);
            if (how != how_stored.end() && how->second.dense) result = densified(result);
            if (how != how_stored.end() && !how->second.structure.empty()) result = on_coordinates_of(result, operands.at(how->second.structure));
            known[output] = result;
            outputs[output] = std::move(result);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error("in the statement `" + statement + "`: " + e.what());
        }
    }
    return outputs;
}

}  // namespace spgen_ref
