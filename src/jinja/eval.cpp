// Expression evaluation.
#include "jinja/interpreter.h"

namespace myriad::jinja {

Value Interpreter::eval(const Expr& e, Frame& frame) {
    try {
        DepthGuard guard(*this);
        return eval_inner(e, frame);
    } catch (const RenderFailure& f) {
        throw TemplateError(e.pos, f.what());  // the innermost node names the place
    }
}

Value Interpreter::lookup(std::string_view name, Frame& frame) {
    for (Frame* f = &frame; f; f = f->parent)
        if (const Value* v = f->find_local(name)) return *v;
    return find_global(name);
}

CallArgs Interpreter::eval_args(const Expr& e, Frame& frame) {
    CallArgs args;
    args.positional.reserve(e.args.size());
    for (const auto& a : e.args) args.positional.push_back(eval(*a, frame));
    if (e.dyn_args)
        for (Value& v : iterate(eval(*e.dyn_args, frame))) args.positional.push_back(std::move(v));
    for (const auto& [k, a] : e.kwargs) args.keyword.emplace_back(k, eval(*a, frame));
    if (e.dyn_kwargs) {
        Value d = eval(*e.dyn_kwargs, frame);
        if (!d.is_dict()) fail("argument after ** must be a mapping, not {}", type_name(d));
        for (const auto& [k, v] : d.dict().entries) {
            if (!k.is_string()) fail("keywords must be strings");
            args.keyword.emplace_back(k.str(), v);
        }
    }
    return args;
}

Value Interpreter::eval_call(const Expr& e, Frame& frame, const Value* caller) {
    const Expr& callee = *e.a;
    if (callee.kind == ExprKind::Getattr) {
        // obj.method(...) without building a bound method first.
        Value obj = eval(*callee.a, frame);
        CallArgs args = eval_args(e, frame);
        if (caller) args.keyword.emplace_back("caller", *caller);
        if (obj.is_string() || obj.is_sequence() || obj.is_dict() || obj.is_loop())
            if (auto r = call_method(*this, obj, callee.name, args)) return *r;
        Value fn = get_attr(*this, obj, callee.name);
        return call(fn, args);
    }
    Value fn = eval(callee, frame);
    CallArgs args = eval_args(e, frame);
    if (caller) args.keyword.emplace_back("caller", *caller);
    return call(fn, args);
}

Value Interpreter::eval_filter(const Expr& e, Frame& frame, const Value* block) {
    Value subject;
    if (!e.a) {
        subject = *block;
    } else if (e.a->kind == ExprKind::Filter && block) {
        subject = eval_filter(*e.a, frame, block);
    } else {
        subject = eval(*e.a, frame);
    }
    FilterFn f = find_filter(e.name);
    if (!f) fail("no filter named '{}'", e.name);
    CallArgs args = eval_args(e, frame);
    try {
        return f(*this, subject, args);
    } catch (const RenderFailure& x) {
        throw TemplateError(e.pos, std::string(x.what()) + " (in filter '" + e.name + "')");
    }
}

Value Interpreter::eval_compare(const Expr& e, Frame& frame) {
    Value left = eval(*e.a, frame);
    for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i], frame);
        bool ok = false;
        switch (e.ops[i]) {
            case Op::Eq:
                ok = equals(left, right);
                break;
            case Op::Ne:
                ok = !equals(left, right);
                break;
            case Op::Lt:
                ok = less(left, right);
                break;
            case Op::Le:
                ok = !less(right, left);
                break;
            case Op::Gt:
                ok = less(right, left);
                break;
            case Op::Ge:
                ok = !less(left, right);
                break;
            case Op::In:
                ok = contains(right, left);
                break;
            case Op::NotIn:
                ok = !contains(right, left);
                break;
            default:
                break;
        }
        if (!ok) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Value Interpreter::eval_inner(const Expr& e, Frame& frame) {
    switch (e.kind) {
        case ExprKind::Literal:
            return e.literal;
        case ExprKind::Name:
            return lookup(e.name, frame);
        case ExprKind::List:
        case ExprKind::Tuple: {
            std::vector<Value> items;
            items.reserve(e.args.size());
            for (const auto& a : e.args) items.push_back(eval(*a, frame));
            return e.kind == ExprKind::List ? heap_.new_list(std::move(items))
                                            : heap_.new_tuple(std::move(items));
        }
        case ExprKind::Dict: {
            DictObject* d = heap_.dict();
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                Value k = eval(*e.args[i], frame);
                d->set(k, eval(*e.args[i + 1], frame));
            }
            return Value::dict(d);
        }
        case ExprKind::Getattr:
            return get_attr(*this, eval(*e.a, frame), e.name);
        case ExprKind::Getitem: {
            Value obj = eval(*e.a, frame);
            if (e.b->kind == ExprKind::Slice) {
                const Expr& s = *e.b;
                Value start = s.a ? eval(*s.a, frame) : Value();
                Value stop = s.b ? eval(*s.b, frame) : Value();
                Value step = s.c ? eval(*s.c, frame) : Value();
                return get_slice(*this, obj, start, stop, step);
            }
            return get_item(*this, obj, eval(*e.b, frame));
        }
        case ExprKind::Slice:
            fail("a slice outside of []");
        case ExprKind::Call:
            return eval_call(e, frame, nullptr);
        case ExprKind::Filter:
            return eval_filter(e, frame, nullptr);
        case ExprKind::Test: {
            Value subject = eval(*e.a, frame);
            TestFn t = find_test(e.name);
            if (!t) fail("no test named '{}'", e.name);
            CallArgs args = eval_args(e, frame);
            return Value::boolean(t(*this, subject, args) != e.negated);
        }
        case ExprKind::Unary:
            if (e.op == Op::Not) return Value::boolean(!truthy(eval(*e.a, frame)));
            return unary_op(e.op, eval(*e.a, frame));
        case ExprKind::Binary: {
            if (e.op == Op::And || e.op == Op::Or) {
                Value l = eval(*e.a, frame);
                if (truthy(l) == (e.op == Op::Or)) return l;
                return eval(*e.b, frame);
            }
            Value l = eval(*e.a, frame);
            Value r = eval(*e.b, frame);
            return binary_op(*this, e.op, l, r);
        }
        case ExprKind::Concat: {
            std::string out;
            for (const auto& a : e.args) {
                append_str(out, eval(*a, frame));
                check_size(out.size());
            }
            return Value::string(std::move(out));
        }
        case ExprKind::Compare:
            return eval_compare(e, frame);
        case ExprKind::CondExpr:
            if (truthy(eval(*e.b, frame))) return eval(*e.a, frame);
            if (e.c) return eval(*e.c, frame);
            return Value::undefined(fmt::format(
                "the inline if-expression on line {} evaluated to false and no else section "
                "was defined.",
                e.pos.line));
    }
    fail("unknown expression");
}

}  // namespace myriad::jinja
