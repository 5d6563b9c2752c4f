// The Jinja parser's internals, shared by parser.cpp (statements) and expr_parser.cpp
// (expressions). Not part of the interface: include parser.h.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace myriad::jinja {

using Names = std::initializer_list<std::string_view>;

class Parser {
  public:
    Parser(std::vector<Token> tokens, const ParseLimits& limits)
        : toks_(std::move(tokens)), limits_(limits) {}

    Body run() {
        Body body = subparse(nullptr);
        if (cur().type != Tok::Eof) error(cur(), "unexpected " + describe(cur()));
        return body;
    }

  private:
    // ---- token stream ----
    const Token& cur() const { return toks_[i_]; }
    const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
    const Token& next() {
        const Token& t = toks_[i_];
        if (i_ + 1 < toks_.size()) ++i_;
        return t;
    }
    bool is_op(std::string_view op) const { return cur().type == Tok::Op && cur().value == op; }
    bool is_name(std::string_view n) const { return cur().type == Tok::Name && cur().value == n; }
    bool is_name_in(Names names) const {
        return cur().type == Tok::Name &&
               std::find(names.begin(), names.end(), cur().value) != names.end();
    }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }
    [[noreturn]] void error(const Token& t, const std::string& msg) {
        throw TemplateError(t.pos, msg);
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op))
            error(cur(), "expected '" + std::string(op) + "', got " + describe(cur()));
    }
    const Token& expect(Tok type, const char* what) {
        if (cur().type != type)
            error(cur(), std::string("expected ") + what + ", got " + describe(cur()));
        return next();
    }
    std::string expect_name() { return expect(Tok::Name, "a name").value; }

    struct DepthGuard {
        Parser& p;
        DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > p.limits_.max_depth)
                p.error(p.cur(), "template nested too deeply (more than " +
                                     std::to_string(p.limits_.max_depth) + " levels)");
        }
        ~DepthGuard() { --p.depth_; }
    };

    ExprPtr node(ExprKind kind, Pos pos) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->pos = pos;
        return e;
    }

    // Sets the node's height from its children; too tall a tree is an error.
    ExprPtr finish(ExprPtr e) {
        int d = 0;
        auto take = [&](const ExprPtr& c) {
            if (c) d = std::max(d, c->depth);
        };
        take(e->a), take(e->b), take(e->c), take(e->dyn_args), take(e->dyn_kwargs);
        for (const auto& c : e->args) take(c);
        for (const auto& kv : e->kwargs) take(kv.second);
        e->depth = d + 1;
        if (e->depth > limits_.max_depth)
            throw TemplateError(e->pos, "expression nested too deeply (more than " +
                                            std::to_string(limits_.max_depth) + " levels)");
        return e;
    }

    // Statements (parser.cpp).
    Body subparse(const Names* end_tokens);
    Body parse_statements(Names end_tokens, bool drop_needle);
    StmtPtr parse_statement();
    void parse_for(Stmt& s);
    void parse_if(Stmt& s);
    void parse_set(Stmt& s);
    void parse_signature(Stmt& s);
    void parse_macro(Stmt& s);
    void parse_call_block(Stmt& s);
    void parse_with(Stmt& s);
    Target parse_assign_target(bool with_tuple, bool name_only, Names extra_end,
                               bool with_namespace);
    Target to_target(const Expr& e);
    // Marks what a macro (or call block) body reads among varargs, kwargs and caller.
    void scan_special_names(Stmt& s);
    void scan_stmt(const Stmt& st, Stmt& m);
    void scan_expr(const Expr& e, Stmt& m);

    // Expressions (expr_parser.cpp).
    bool is_tuple_end(Names extra_end) const;
    ExprPtr parse_tuple(bool simplified, bool with_condexpr, Names extra_end, bool explicit_parens);
    ExprPtr parse_expression(bool with_condexpr);
    ExprPtr parse_condexpr();
    ExprPtr binary(ExprKind kind, Op op, ExprPtr l, ExprPtr r, Pos pos);
    ExprPtr parse_or();
    ExprPtr parse_and();
    ExprPtr parse_not();
    ExprPtr parse_compare();
    ExprPtr parse_math1();
    ExprPtr parse_concat();
    ExprPtr parse_math2();
    ExprPtr parse_pow();
    ExprPtr parse_unary(bool with_filter);
    ExprPtr parse_primary();
    ExprPtr parse_list();
    ExprPtr parse_dict();
    ExprPtr parse_postfix(ExprPtr e);
    ExprPtr parse_filter_expr(ExprPtr e);
    ExprPtr parse_subscript(ExprPtr obj);
    ExprPtr parse_subscribed();
    void parse_call_args(Expr& e);
    ExprPtr parse_call(ExprPtr callee);
    std::string dotted_name();
    ExprPtr parse_filter(ExprPtr subject, bool start_inline);
    ExprPtr parse_test(ExprPtr subject);

    std::vector<Token> toks_;
    size_t i_ = 0;
    ParseLimits limits_;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace myriad::jinja
