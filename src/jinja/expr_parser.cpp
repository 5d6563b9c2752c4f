// The expression half of the Jinja parser: jinja2's precedence climbing.
#include "jinja/parser_impl.h"

namespace myriad::jinja {

bool Parser::is_tuple_end(Names extra_end) const {
    if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) return true;
    return is_name_in(extra_end);
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr, Names extra_end,
                            bool explicit_parens) {
    Pos pos = cur().pos;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
        if (!args.empty()) expect_op(",");
        if (is_tuple_end(extra_end)) break;
        if (simplified) {
            args.push_back(parse_primary());
        } else {
            args.push_back(parse_expression(with_condexpr));
        }
        if (is_op(",")) {
            is_tuple = true;
        } else {
            break;
        }
    }
    if (!is_tuple) {
        if (!args.empty()) return std::move(args[0]);
        if (!explicit_parens) error(cur(), "expected an expression, got " + describe(cur()));
    }
    ExprPtr t = node(ExprKind::Tuple, pos);
    t->args = std::move(args);
    return finish(std::move(t));
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
    Pos pos = cur().pos;
    ExprPtr e = parse_or();
    while (skip_name("if")) {
        ExprPtr cond = parse_or();
        ExprPtr other;
        if (skip_name("else")) other = parse_condexpr();
        ExprPtr c = node(ExprKind::CondExpr, pos);
        c->a = std::move(e);
        c->b = std::move(cond);
        c->c = std::move(other);
        e = finish(std::move(c));
    }
    return e;
}

ExprPtr Parser::binary(ExprKind kind, Op op, ExprPtr l, ExprPtr r, Pos pos) {
    ExprPtr e = node(kind, pos);
    e->op = op;
    e->a = std::move(l);
    e->b = std::move(r);
    return finish(std::move(e));
}

ExprPtr Parser::parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
        Pos p = next().pos;
        l = binary(ExprKind::Binary, Op::Or, std::move(l), parse_and(), p);
    }
    return l;
}

ExprPtr Parser::parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
        Pos p = next().pos;
        l = binary(ExprKind::Binary, Op::And, std::move(l), parse_not(), p);
    }
    return l;
}

ExprPtr Parser::parse_not() {
    if (is_name("not")) {
        DepthGuard guard(*this);
        Pos p = next().pos;
        ExprPtr e = node(ExprKind::Unary, p);
        e->op = Op::Not;
        e->a = parse_not();
        return finish(std::move(e));
    }
    return parse_compare();
}

ExprPtr Parser::parse_compare() {
    Pos pos = cur().pos;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
        Op op = Op::None;
        if (cur().type == Tok::Op) {
            const std::string& v = cur().value;
            op = v == "=="   ? Op::Eq
                 : v == "!=" ? Op::Ne
                 : v == "<"  ? Op::Lt
                 : v == "<=" ? Op::Le
                 : v == ">"  ? Op::Gt
                 : v == ">=" ? Op::Ge
                             : Op::None;
            if (op != Op::None) next();
        } else if (is_name("in")) {
            next();
            op = Op::In;
        } else if (is_name("not") && look().type == Tok::Name && look().value == "in") {
            next(), next();
            op = Op::NotIn;
        }
        if (op == Op::None) break;
        if (!cmp) {
            cmp = node(ExprKind::Compare, pos);
            cmp->a = std::move(first);
        }
        cmp->ops.push_back(op);
        cmp->args.push_back(parse_math1());
    }
    return cmp ? finish(std::move(cmp)) : std::move(first);
}

ExprPtr Parser::parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
        Op op = cur().value == "+" ? Op::Add : Op::Sub;
        Pos p = next().pos;
        l = binary(ExprKind::Binary, op, std::move(l), parse_concat(), p);
    }
    return l;
}

ExprPtr Parser::parse_concat() {
    Pos pos = cur().pos;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    ExprPtr c = node(ExprKind::Concat, pos);
    c->args.push_back(std::move(first));
    while (skip_op("~")) c->args.push_back(parse_math2());
    return finish(std::move(c));
}

ExprPtr Parser::parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
        const std::string& v = cur().value;
        Op op = v == "*" ? Op::Mul : v == "/" ? Op::Div : v == "//" ? Op::FloorDiv : Op::Mod;
        Pos p = next().pos;
        l = binary(ExprKind::Binary, op, std::move(l), parse_pow(), p);
    }
    return l;
}

ExprPtr Parser::parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
        Pos p = next().pos;
        l = binary(ExprKind::Binary, Op::Pow, std::move(l), parse_unary(true), p);
    }
    return l;
}

ExprPtr Parser::parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
        Op op = cur().value == "-" ? Op::Neg : Op::Pos;
        Pos p = next().pos;
        e = node(ExprKind::Unary, p);
        e->op = op;
        e->a = parse_unary(false);
        e = finish(std::move(e));
    } else {
        e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
}

ExprPtr Parser::parse_primary() {
    const Token& t = cur();
    ExprPtr e;
    switch (t.type) {
        case Tok::Name: {
            const std::string& v = t.value;
            e = node(ExprKind::Literal, t.pos);
            if (v == "true" || v == "True") {
                e->literal = Value::boolean(true);
            } else if (v == "false" || v == "False") {
                e->literal = Value::boolean(false);
            } else if (v == "none" || v == "None") {
                e->literal = Value::none();
            } else {
                e->kind = ExprKind::Name;
                e->name = v;
            }
            next();
            return e;
        }
        case Tok::String: {
            std::string s;
            Pos pos = t.pos;
            while (cur().type == Tok::String) s += next().value;
            e = node(ExprKind::Literal, pos);
            e->literal = Value::string(std::move(s));
            return e;
        }
        case Tok::Integer:
        case Tok::Float:
            e = node(ExprKind::Literal, t.pos);
            e->literal =
                t.type == Tok::Integer ? Value::integer(t.int_value) : Value::number(t.float_value);
            next();
            return e;
        case Tok::Op:
            if (t.value == "(") {
                next();
                e = parse_tuple(false, true, {}, true);
                expect_op(")");
                return e;
            }
            if (t.value == "[") return parse_list();
            if (t.value == "{") return parse_dict();
            break;
        default:
            break;
    }
    error(t, "unexpected " + describe(t));
}

ExprPtr Parser::parse_list() {
    ExprPtr e = node(ExprKind::List, next().pos);
    while (!is_op("]")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("]")) break;
        e->args.push_back(parse_expression(true));
    }
    expect_op("]");
    return finish(std::move(e));
}

ExprPtr Parser::parse_dict() {
    ExprPtr e = node(ExprKind::Dict, next().pos);
    while (!is_op("}")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("}")) break;
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
    }
    expect_op("}");
    return finish(std::move(e));
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
    while (true) {
        if (is_op(".") || is_op("[")) {
            e = parse_subscript(std::move(e));
        } else if (is_op("(")) {
            e = parse_call(std::move(e));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_filter_expr(ExprPtr e) {
    while (true) {
        if (is_op("|")) {
            e = parse_filter(std::move(e), false);
        } else if (is_name("is")) {
            e = parse_test(std::move(e));
        } else if (is_op("(")) {
            e = parse_call(std::move(e));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_subscript(ExprPtr obj) {
    const Token& t = next();
    if (t.value == ".") {
        const Token& attr = cur();
        if (attr.type == Tok::Name) {
            ExprPtr e = node(ExprKind::Getattr, t.pos);
            e->a = std::move(obj);
            e->name = next().value;
            return finish(std::move(e));
        }
        if (attr.type != Tok::Integer) error(attr, "expected a name or number after '.'");
        ExprPtr e = node(ExprKind::Getitem, t.pos);
        e->a = std::move(obj);
        e->b = node(ExprKind::Literal, attr.pos);
        e->b->literal = Value::integer(next().int_value);
        return finish(std::move(e));
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
        if (!args.empty()) expect_op(",");
        args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr e = node(ExprKind::Getitem, t.pos);
    e->a = std::move(obj);
    if (args.size() == 1) {
        e->b = std::move(args[0]);
    } else {
        e->b = node(ExprKind::Tuple, t.pos);
        e->b->args = std::move(args);
        e->b = finish(std::move(e->b));
    }
    return finish(std::move(e));
}

ExprPtr Parser::parse_subscribed() {
    Pos pos = cur().pos;
    ExprPtr start;
    if (!is_op(":")) {
        start = parse_expression(true);
        if (!is_op(":")) return start;
    }
    next();  // ':'
    ExprPtr s = node(ExprKind::Slice, pos);
    s->a = std::move(start);
    if (!is_op(":") && !is_op("]") && !is_op(",")) s->b = parse_expression(true);
    if (skip_op(":") && !is_op("]") && !is_op(",")) s->c = parse_expression(true);
    return finish(std::move(s));
}

void Parser::parse_call_args(Expr& e) {
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
        if (!ok) error(cur(), "invalid syntax for function call expression");
    };
    while (!is_op(")")) {
        if (require_comma) {
            expect_op(",");
            if (is_op(")")) break;
        }
        if (skip_op("*")) {
            ensure(!e.dyn_args && !e.dyn_kwargs);
            e.dyn_args = parse_expression(true);
        } else if (skip_op("**")) {
            ensure(!e.dyn_kwargs);
            e.dyn_kwargs = parse_expression(true);
        } else if (cur().type == Tok::Name && look().type == Tok::Op && look().value == "=") {
            ensure(!e.dyn_kwargs);
            std::string key = next().value;
            next();
            e.kwargs.emplace_back(std::move(key), parse_expression(true));
        } else {
            ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
            e.args.push_back(parse_expression(true));
        }
        require_comma = true;
    }
    expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr callee) {
    ExprPtr e = node(ExprKind::Call, callee->pos);  // errors point at what is called
    e->a = std::move(callee);
    parse_call_args(*e);
    return finish(std::move(e));
}

std::string Parser::dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    return name;
}

ExprPtr Parser::parse_filter(ExprPtr subject, bool start_inline) {
    while (is_op("|") || start_inline) {
        if (!start_inline) next();
        start_inline = false;
        Pos pos = cur().pos;
        ExprPtr e = node(ExprKind::Filter, pos);
        e->name = dotted_name();
        e->a = std::move(subject);
        if (is_op("(")) parse_call_args(*e);
        subject = finish(std::move(e));
    }
    return subject;
}

ExprPtr Parser::parse_test(ExprPtr subject) {
    Pos pos = next().pos;  // 'is'
    ExprPtr e = node(ExprKind::Test, pos);
    e->negated = skip_name("not");
    e->name = dotted_name();
    e->a = std::move(subject);
    if (is_op("(")) {
        parse_call_args(*e);
    } else {
        Tok t = cur().type;
        bool arg_start = t == Tok::Name || t == Tok::String || t == Tok::Integer ||
                         t == Tok::Float || is_op("(") || is_op("[") || is_op("{");
        if (arg_start && !is_name_in({"else", "or", "and"})) {
            if (is_name("is")) error(cur(), "you cannot chain multiple tests with 'is'");
            e->args.push_back(parse_postfix(parse_primary()));
        }
    }
    return finish(std::move(e));
}

}  // namespace myriad::jinja
