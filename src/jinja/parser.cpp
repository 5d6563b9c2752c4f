#include "jinja/parser.h"

#include "jinja/parser_impl.h"

namespace myriad::jinja {

Body Parser::subparse(const Names* end_tokens) {
    DepthGuard guard(*this);
    Body body;
    while (cur().type != Tok::Eof) {
        const Token& t = cur();
        if (t.type == Tok::Data) {
            auto s = std::make_unique<Stmt>();
            s->kind = StmtKind::Text;
            s->pos = t.pos;
            s->text = t.value;
            body.push_back(std::move(s));
            next();
        } else if (t.type == Tok::VarBegin) {
            next();
            auto s = std::make_unique<Stmt>();
            s->kind = StmtKind::Print;
            s->pos = t.pos;
            s->expr = parse_tuple(false, true, {}, false);
            expect(Tok::VarEnd, "end of print statement");
            body.push_back(std::move(s));
        } else if (t.type == Tok::BlockBegin) {
            next();
            if (end_tokens && is_name_in(*end_tokens)) return body;
            body.push_back(parse_statement());
            expect(Tok::BlockEnd, "end of statement block");
        } else {
            error(t, "unexpected " + describe(t));
        }
    }
    if (end_tokens) {
        std::string tags;
        for (std::string_view n : *end_tokens)
            tags += (tags.empty() ? "'" : " or '") + std::string(n) + "'";
        error(cur(), "unexpected end of template; looking for the tags " + tags);
    }
    return body;
}

Body Parser::parse_statements(Names end_tokens, bool drop_needle) {
    skip_op(":");
    expect(Tok::BlockEnd, "end of statement block");
    Body body = subparse(&end_tokens);
    if (drop_needle) next();
    return body;
}

StmtPtr Parser::parse_statement() {
    const Token& t = cur();
    if (t.type != Tok::Name) error(t, "tag name expected");
    auto s = std::make_unique<Stmt>();
    s->pos = t.pos;
    std::string tag = t.value;
    next();
    if (tag == "for") {
        parse_for(*s);
    } else if (tag == "if") {
        parse_if(*s);
    } else if (tag == "set") {
        parse_set(*s);
    } else if (tag == "macro") {
        parse_macro(*s);
    } else if (tag == "call") {
        parse_call_block(*s);
    } else if (tag == "filter") {
        s->kind = StmtKind::FilterBlock;
        s->expr = parse_filter(nullptr, true);
        s->body = parse_statements({"endfilter"}, true);
    } else if (tag == "with") {
        parse_with(*s);
    } else if (tag == "generation") {
        s->kind = StmtKind::Scope;
        s->body = parse_statements({"endgeneration"}, true);
    } else if (tag == "break" || tag == "continue") {
        if (loop_depth_ == 0) error(t, "'" + tag + "' outside of a for loop");
        s->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
    } else {
        error(t, "unknown tag '" + tag + "'");
    }
    return s;
}

void Parser::parse_for(Stmt& s) {
    s.kind = StmtKind::For;
    s.target = parse_assign_target(true, false, {"in"}, false);
    if (!skip_name("in")) error(cur(), "expected 'in', got " + describe(cur()));
    s.expr = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s.cond = parse_expression(true);
    s.recursive = skip_name("recursive");
    ++loop_depth_;
    s.body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().value != "endfor") s.else_body = parse_statements({"endfor"}, true);
}

void Parser::parse_if(Stmt& s) {
    s.kind = StmtKind::If;
    while (true) {
        IfBranch br;
        br.cond = parse_tuple(false, false, {}, false);
        br.body = parse_statements({"elif", "else", "endif"}, false);
        s.branches.push_back(std::move(br));
        std::string tag = next().value;
        if (tag == "elif") continue;
        if (tag == "else") {
            IfBranch el;
            el.body = parse_statements({"endif"}, true);
            s.branches.push_back(std::move(el));
        }
        break;
    }
}

void Parser::parse_set(Stmt& s) {
    s.target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
        s.kind = StmtKind::Set;
        s.expr = parse_tuple(false, true, {}, false);
        return;
    }
    s.kind = StmtKind::SetBlock;
    if (is_op("|")) s.expr = parse_filter(nullptr, false);
    s.body = parse_statements({"endset"}, true);
}

void Parser::parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
        if (!s.params.empty()) expect_op(",");
        Param p;
        p.name = expect_name();
        if (skip_op("=")) {
            p.default_value = parse_expression(true);
        } else if (!s.params.empty() && s.params.back().default_value) {
            error(cur(), "non-default argument follows default argument");
        }
        s.params.push_back(std::move(p));
    }
    expect_op(")");
}

void Parser::parse_macro(Stmt& s) {
    s.kind = StmtKind::Macro;
    s.name = expect_name();
    parse_signature(s);
    int saved = loop_depth_;
    loop_depth_ = 0;
    s.body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved;
    scan_special_names(s);
}

void Parser::parse_call_block(Stmt& s) {
    s.kind = StmtKind::CallBlock;
    if (is_op("(")) parse_signature(s);
    s.expr = parse_expression(true);
    if (s.expr->kind != ExprKind::Call) error(cur(), "expected a call after 'call'");
    int saved = loop_depth_;
    loop_depth_ = 0;
    s.body = parse_statements({"endcall"}, true);
    loop_depth_ = saved;
    scan_special_names(s);
}

void Parser::parse_with(Stmt& s) {
    s.kind = StmtKind::With;
    while (cur().type != Tok::BlockEnd) {
        if (!s.assignments.empty()) expect_op(",");
        Target t = parse_assign_target(true, false, {}, false);
        expect_op("=");
        s.assignments.emplace_back(std::move(t), parse_expression(true));
    }
    s.body = parse_statements({"endwith"}, true);
}

Target Parser::parse_assign_target(bool with_tuple, bool name_only, Names extra_end,
                                   bool with_namespace) {
    Target t;
    t.pos = cur().pos;
    if (with_namespace && cur().type == Tok::Name && look().type == Tok::Op &&
        look().value == ".") {
        t.kind = Target::Kind::Attr;
        t.name = next().value;
        next();
        t.attr = expect_name();
        return t;
    }
    if (name_only) {
        t.name = expect_name();
        return t;
    }
    ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    return to_target(*e);
}

Target Parser::to_target(const Expr& e) {
    Target t;
    t.pos = e.pos;
    if (e.kind == ExprKind::Name) {
        t.name = e.name;
        return t;
    }
    if (e.kind == ExprKind::Tuple) {
        t.kind = Target::Kind::Tuple;
        for (const auto& item : e.args) t.items.push_back(to_target(*item));
        return t;
    }
    throw TemplateError(e.pos, "can't assign to this expression");
}

// Marks what a macro (or call block) body reads among varargs, kwargs and caller.
void Parser::scan_special_names(Stmt& s) {
    for (const auto& st : s.body) scan_stmt(*st, s);
    for (const auto& p : s.params)
        if (p.default_value) scan_expr(*p.default_value, s);
}

void Parser::scan_stmt(const Stmt& st, Stmt& m) {
    for (const ExprPtr* e : {&st.expr, &st.cond})
        if (*e) scan_expr(**e, m);
    for (const auto& br : st.branches) {
        if (br.cond) scan_expr(*br.cond, m);
        for (const auto& b : br.body) scan_stmt(*b, m);
    }
    for (const auto& b : st.body) scan_stmt(*b, m);
    for (const auto& b : st.else_body) scan_stmt(*b, m);
    for (const auto& [t, e] : st.assignments) scan_expr(*e, m);
    for (const auto& p : st.params)
        if (p.default_value) scan_expr(*p.default_value, m);
}

void Parser::scan_expr(const Expr& e, Stmt& m) {
    if (e.kind == ExprKind::Name) {
        m.uses_varargs |= e.name == "varargs";
        m.uses_kwargs |= e.name == "kwargs";
        m.uses_caller |= e.name == "caller";
    }
    for (const ExprPtr* c : {&e.a, &e.b, &e.c, &e.dyn_args, &e.dyn_kwargs})
        if (*c) scan_expr(**c, m);
    for (const auto& c : e.args) scan_expr(*c, m);
    for (const auto& kv : e.kwargs) scan_expr(*kv.second, m);
}

Body parse(std::string_view source, const ParseLimits& limits) {
    return Parser(tokenize(source), limits).run();
}

}  // namespace myriad::jinja
