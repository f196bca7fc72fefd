// An inline-PTX statement parsed (part of libmmemu.so): its template split into instructions, the registers it
// declares (.reg, predicates among them) and its labels, each instruction decoded by its family (ptx.cpp's, which
// hands others to ptx_mma.cpp and ptx_cluster.cpp, or ptx_async.cpp's) into what its run needs; a statement is
// parsed once per launch.  A value is an operand (%N), a declared register, a special register (ptx_cluster.cpp's:
// %laneid, %tid, %ctaid, the cluster's, ...), the sink `_` or a constant; an
// operand is a value, a vector `{...}`, an address `[base+offset]`, a tensor's `[map, {coordinates}]` or a pair
// `d|p`; an instruction may be guarded (`@p`, `@!p`), and `bra` jumps to a label of the statement.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ptx.h"

namespace {

std::string trim(const std::string& s) {
    size_t lo = s.find_first_not_of(" \t\r\n"), hi = s.find_last_not_of(" \t\r\n");
    return lo == std::string::npos ? "" : s.substr(lo, hi - lo + 1);
}

}  // namespace

namespace mmemu_ptx {

std::vector<std::string> split(const std::string& s, char separator) {
    std::vector<std::string> parts;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
        if (i < s.size() && (s[i] == '{' || s[i] == '[')) ++depth;
        if (i < s.size() && (s[i] == '}' || s[i] == ']')) --depth;
        if (i == s.size() || (s[i] == separator && depth == 0)) {
            parts.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    return parts;
}

bool shaped(const Instruction& in, const char* kinds) {
    static const std::map<char, Operand::Kind> letters = {{'s', Operand::kScalar}, {'v', Operand::kVector},
                                                          {'a', Operand::kAddress}, {'t', Operand::kTensor},
                                                          {'p', Operand::kPair}};
    if (in.operands.size() != strlen(kinds)) return false;
    for (size_t i = 0; kinds[i]; ++i)
        if (in.operands[i].kind != letters.at(kinds[i])) return false;
    return true;
}

bool registers(const Operand& o, size_t n) {
    if (o.values.size() != n) return false;
    for (const Value& v : o.values)
        if (v.reg < 0) return false;
    return true;
}

}  // namespace mmemu_ptx

namespace {

using namespace mmemu_ptx;

// A PTX identifier: a letter then letters, digits, `_` or `$`, or `_`, `$` or `%` then at least one of those.
bool identifier(const std::string& s) {
    auto follows = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; };
    if (s.empty() || !std::all_of(s.begin() + 1, s.end(), follows)) return false;
    return std::isalpha(static_cast<unsigned char>(s[0])) || ((s[0] == '_' || s[0] == '$' || s[0] == '%') &&
                                                              s.size() > 1);
}

// Whether predicates and the sink stand only where the decoded instruction takes them (Instruction::predicates
// and ::sink); an immediate, or one of the statement's `operands` (an "n" one is), may stand for a predicate's 0 or 1.
bool placed(const Instruction& in, int operands) {
    for (size_t i = 0; i < in.operands.size(); ++i) {
        const Operand& o = in.operands[i];
        bool predicate = i < 32 && (in.predicates >> i & 1);
        for (size_t j = 0; j < o.values.size(); ++j) {
            const Value& v = o.values[j];
            bool wanted = predicate && (o.kind != Operand::kPair || j == 1);
            bool named = v.reg >= operands || v.special >= 0;  // a declared or a special register
            if (named && v.predicate != wanted) return false;
            if (o.values[j].reg == kSink && !(in.sink && i == 0 && j == 0 && o.kind != Operand::kAddress))
                return false;
        }
    }
    return true;
}

// What the opcode says: the operation, its qualifiers, and whether the operands fit it; false where the
// emulator does not run the instruction.
bool decode(Instruction& in, int operands) {
    std::vector<std::string> q;
    for (size_t start = 0, dot; start <= in.opcode.size(); start = dot + 1) {
        dot = in.opcode.find('.', start);
        if (dot == std::string::npos) dot = in.opcode.size();
        q.push_back(in.opcode.substr(start, dot - start));
    }
    return (async_family(q) ? decode_async(in, q) : decode_core(in, q)) && placed(in, operands);
}

class Parser {
public:
    Parser(int operands, Program& program) : operands_(operands), program_(program) {
        program.registers = operands;
    }

    // A value: %N, a declared register (a predicate too), a special register, the sink `_`, or an integer or PTX
    // float constant (0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX).
    bool value(const std::string& s, Value& v) const {
        if (s.size() > 1 && s[0] == '%' && std::isdigit(static_cast<unsigned char>(s[1]))) {
            char* end;
            long n = std::strtol(s.c_str() + 1, &end, 10);
            if (*end || n >= operands_) return false;
            v.reg = int(n);
            return true;
        }
        auto found = names_.find(s);
        if (found != names_.end()) {
            v.reg = found->second;
            v.predicate = predicates_.count(s) > 0;
            return true;
        }
        if (s.size() > 1 && s[0] == '%' && special_register(s.substr(1), v.special, v.predicate)) return true;
        if (s == "_") {
            v.reg = kSink;
            return true;
        }
        if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'd' || s[1] == 'F' || s[1] == 'D')) {
            char* end;
            v.imm = std::strtoull(s.c_str() + 2, &end, 16);
            return !*end && s.size() == (s[1] == 'f' || s[1] == 'F' ? 10u : 18u);
        }
        if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) return false;
        char* end;
        v.imm = uint64_t(std::strtoll(s.c_str(), &end, 0));
        return !*end || ((*end == 'U' || *end == 'u') && !end[1]);
    }

    bool values(const std::vector<std::string>& texts, Operand& o) const {
        for (const std::string& text : texts) {
            o.values.emplace_back();
            if (!value(text, o.values.back())) return false;
        }
        return true;
    }

    bool operand(const std::string& s, Operand& o) const {
        if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
            o.kind = Operand::kVector;
            return values(split(s.substr(1, s.size() - 2), ','), o);
        }
        if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
            std::string inner = trim(s.substr(1, s.size() - 2));
            std::vector<std::string> parts = split(inner, ',');
            if (parts.size() == 2 && parts[1].size() >= 2 && parts[1].front() == '{' && parts[1].back() == '}') {
                o.kind = Operand::kTensor;  // [map, {coordinates}]
                return values({parts[0]}, o) && values(split(parts[1].substr(1, parts[1].size() - 2), ','), o);
            }
            o.kind = Operand::kAddress;
            size_t sign = inner.find_first_of("+-", 1);
            o.values.emplace_back();
            if (sign == std::string::npos) return value(inner, o.values.back());
            Value displacement;
            if (!value(trim(inner.substr(0, sign)), o.values.back()) ||
                !value(trim(inner.substr(sign + 1)), displacement) || displacement.reg != kImmediate ||
                displacement.special >= 0)
                return false;
            o.offset = inner[sign] == '-' ? -int64_t(displacement.imm) : int64_t(displacement.imm);
            return true;
        }
        size_t bar = s.find('|');
        if (bar != std::string::npos) {
            o.kind = Operand::kPair;
            return values({trim(s.substr(0, bar)), trim(s.substr(bar + 1))}, o);
        }
        return values({s}, o);
    }

    // `.reg .type name, name<N>, ...`
    bool declare(const std::string& s) {
        std::string rest = trim(s.substr(4));
        size_t space = rest.find_first_of(" \t\r\n");
        if (rest.empty() || rest[0] != '.' || space == std::string::npos) return false;
        bool predicate = rest.substr(0, space) == ".pred";
        for (const std::string& name : split(rest.substr(space), ',')) {
            size_t angle = name.find('<');
            int n = angle == std::string::npos ? 0 : std::atoi(name.c_str() + angle + 1);
            std::string base = name.substr(0, angle);
            if (!identifier(base)) return false;
            for (int i = 0; i < (n ? n : 1); ++i) {
                std::string each = n ? base + std::to_string(i) : base;
                names_[each] = program_.registers++;
                if (predicate) predicates_.insert(each);
            }
        }
        return true;
    }

    // `{@{!}p} opcode operand, ...` (the statement without its `;`); a branch's operand is its label.
    bool instruction(std::string s, Instruction& in) const {
        if (!s.empty() && s[0] == '@') {
            size_t space = s.find_first_of(" \t\r\n");
            in.negated = s.size() > 1 && s[1] == '!';
            std::string name = s.substr(in.negated ? 2 : 1, space == std::string::npos ? 0 : space - 1 - in.negated);
            auto found = names_.find(name);
            if (found == names_.end() || !predicates_.count(name)) return false;
            in.guard = found->second;
            s = trim(s.substr(space));
        }
        size_t end = 0;
        while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '.' || s[end] == ':' ||
                                  s[end] == '_'))
            ++end;
        in.opcode = s.substr(0, end);
        std::string rest = trim(s.substr(end));
        if (in.opcode.empty() || (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end])))) return false;
        if (in.opcode == "bra" || in.opcode == "bra.uni") {
            in.op = Op::kBranch;
            in.label = rest;
            return identifier(rest);
        }
        if (!rest.empty())
            for (const std::string& text : split(rest, ',')) {
                in.operands.emplace_back();
                if (!operand(text, in.operands.back())) return false;
            }
        return decode(in, operands_);
    }

private:
    int operands_;
    Program& program_;
    std::map<std::string, int> names_;  // the declared registers
    std::set<std::string> predicates_;  // those of them that are predicates
};


std::string uncommented(std::string s) {
    for (auto [open, close] : {std::make_pair("/*", "*/"), std::make_pair("//", "\n")})
        for (size_t at = s.find(open); at != std::string::npos; at = s.find(open, at)) {
            size_t end = s.find(close, at + 2);  // a line comment's newline stays
            s.replace(at, end == std::string::npos ? std::string::npos : end + (close[0] == '*' ? 2 : 0) - at, " ");
        }
    return s;
}

// Where a statement's body starts with a label (`name:`), the colon's place; else npos.
size_t label_end(const std::string& body) {
    size_t colon = body.find(':');
    return colon != std::string::npos && body.compare(colon, 2, "::") != 0 && identifier(body.substr(0, colon))
               ? colon
               : std::string::npos;
}

// The statement's instructions: the text (`%%` made `%`, as an asm statement with operands has it) split at `;`,
// with comments, and braces that open or close a scope, dropped; a label names the instruction written after it.
// Declarations (.reg) name registers; the first instruction that does not decode, or a branch to a label the
// statement lacks, stops the parse.
Program parse(const char* text, int operands) {
    Program program;
    Parser parser(operands, program);
    std::string s = uncommented(text);
    for (size_t at = s.find("%%"); at != std::string::npos; at = s.find("%%", at + 1)) s.erase(at, 1);
    const char* blank = " \t\r\n{}";
    size_t at = 0;
    while (true) {
        at = s.find_first_not_of(blank, at);
        if (at == std::string::npos) break;
        size_t end = s.find(';', at);
        std::string statement = s.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
        at = end == std::string::npos ? s.size() : end + 1;
        std::string body = trim(statement.substr(0, statement.find(';')));
        Instruction in;
        in.text = trim(statement);
        bool ok = true;
        for (size_t colon; ok && (colon = label_end(body)) != std::string::npos;) {
            ok = program.labels.emplace(body.substr(0, colon), int(program.code.size())).second;
            size_t next = body.find_first_not_of(blank, colon + 1);
            body = next == std::string::npos ? "" : body.substr(next);
        }
        if (ok && !body.empty())
            ok = body.compare(0, 4, ".reg") == 0 ? parser.declare(body) : parser.instruction(body, in);
        if (!ok) {
            program.unsupported = in.text;
            break;
        }
        if (!in.opcode.empty()) program.code.push_back(std::move(in));
    }
    for (Instruction& in : program.code) {
        if (in.op != Op::kBranch) continue;
        auto found = program.labels.find(in.label);
        if (found != program.labels.end()) in.target = found->second;
        else if (program.unsupported.empty()) program.unsupported = in.text;
    }
    return program;
}

}  // namespace

namespace mmemu_ptx {

const Program& program_of(const char* text, int count) {
    static std::map<std::pair<const char*, int>, Program> programs;  // a literal's address names its statement
    auto key = std::make_pair(text, count);
    auto found = programs.find(key);
    if (found == programs.end()) found = programs.emplace(key, parse(text, count)).first;
    return found->second;
}

const Constraints& constraints_of(const char* constraints) {
    static std::map<const char*, Constraints> known;  // a literal's address names its statement's
    auto found = known.find(constraints);
    if (found != known.end()) return found->second;
    Constraints c;
    for (const std::string& kind : *constraints ? split(constraints, ',') : std::vector<std::string>{}) {
        bool tied = !kind.empty() && kind.find_first_not_of("0123456789") == std::string::npos;
        c.kinds.push_back(kind.find_first_of("=+") != std::string::npos ? Constraints::kOutput
                          : kind == "n"                                  ? Constraints::kConstant
                          : tied                                         ? Constraints::kTied
                                                                         : Constraints::kInput);
        c.tied.push_back(tied ? std::atoi(kind.c_str()) : -1);
    }
    return known.emplace(constraints, std::move(c)).first->second;
}

}  // namespace mmemu_ptx
