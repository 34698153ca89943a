#include "ref_statements.h"

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
    for (const std::string& statement : split_statements(spec_text)) {
        const std::string output = output_of(statement);
        auto how = stored.find(output);
        std::map<std::string, Tensor> operands = known;
        std::string text = statement;
        try {
            if (how != stored.end()) text = on_entries_of(statement, how->second.structure, operands);
            Tensor result = evaluate(text, operands, extra_dims);
            if (how != stored.end() && how->second.dense) result = densified(result);
            if (how != stored.end() && !how->second.structure.empty()) result = on_coordinates_of(result, operands.at(how->second.structure));
            known[output] = result;
            outputs[output] = std::move(result);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error("in the statement `" + statement + "`: " + e.what());
        }
    }
    return outputs;
}

}  // namespace spgen_ref
