// Template rendering: statements, scopes and macros.
#include "jinja/renderer.h"

#include <algorithm>

#include "jinja/interpreter.h"
#include "jinja/item_limit.h"
#include "jinja/json.h"

namespace myriad::jinja {

// ---- Template ------------------------------------------------------------------------------

Template::Template(std::string_view source) {
    auto body = std::make_shared<Body>(parse(source));
    check_names(*body);
    body_ = std::move(body);
}

std::string Template::render(const nlohmann::ordered_json& variables,
                             const RenderOptions& options) const {
    Interpreter in(options);
    return in.render(*body_, variables);
}

namespace {

void check_expr(const Expr& e) {
    if (e.kind == ExprKind::Filter && !find_filter(e.name))
        throw TemplateError(e.pos, "no filter named '" + e.name + "'");
    if (e.kind == ExprKind::Test && !find_test(e.name))
        throw TemplateError(e.pos, "no test named '" + e.name + "'");
    for (const ExprPtr* c : {&e.a, &e.b, &e.c, &e.dyn_args, &e.dyn_kwargs})
        if (*c) check_expr(**c);
    for (const auto& c : e.args) check_expr(*c);
    for (const auto& kv : e.kwargs) check_expr(*kv.second);
}

}  // namespace

void check_names(const Body& body) {
    for (const auto& s : body) {
        for (const ExprPtr* e : {&s->expr, &s->cond})
            if (*e) check_expr(**e);
        for (const auto& br : s->branches) {
            if (br.cond) check_expr(*br.cond);
            check_names(br.body);
        }
        for (const auto& p : s->params)
            if (p.default_value) check_expr(*p.default_value);
        for (const auto& [t, e] : s->assignments) check_expr(*e);
        check_names(s->body);
        check_names(s->else_body);
    }
}

// ---- frames and macros ---------------------------------------------------------------------

Frame::~Frame() {
    for (MacroObject* m : macros) m->closure = nullptr;
}

const Value* Frame::find_local(std::string_view name) const {
    for (const auto& [k, v] : vars)
        if (k == name) return &v;
    return nullptr;
}

void Frame::set(std::string_view name, Value v) {
    for (auto& [k, old] : vars)
        if (k == name) {
            old = std::move(v);
            return;
        }
    vars.emplace_back(std::string(name), std::move(v));
}

Value MacroObject::call(Context& ctx, CallArgs& args) {
    return static_cast<Interpreter&>(ctx).call_macro(*this, args);
}

// ---- interpreter ---------------------------------------------------------------------------

Interpreter::Interpreter(const RenderOptions& options)
    : opt_(options), heap_(options.limits.max_objects) {}

Interpreter::DepthGuard::DepthGuard(Interpreter& interp) : in(interp) {
    if (++in.depth_ > in.opt_.limits.max_eval_depth) {
        --in.depth_;
        fail("template nesting or recursion deeper than {} levels", in.opt_.limits.max_eval_depth);
    }
}

std::string Interpreter::render(const Body& body, const nlohmann::ordered_json& variables) {
    if (!variables.is_object()) bad_input("template variables must be a JSON object");
    ListItemLimit item_limit(opt_.limits.max_output_bytes);
    Frame root(nullptr);
    for (const auto& [name, value] : variables.items()) {
        try {
            root.set(name, from_json(heap_, value));
        } catch (const RenderFailure& e) {
            bad_input("template variable '{}': {}", name, e.what());
        }
    }
    std::string out;
    out_ = &out;
    exec(body, root);
    out_ = nullptr;
    return out;
}

void Interpreter::check_size(size_t size) {
    if (size > opt_.limits.max_output_bytes)
        fail("the template built a string or list past the limit of {} bytes",
             opt_.limits.max_output_bytes);
}

void Interpreter::count_iterations(size_t n) {
    iterations_ += static_cast<int64_t>(std::min<size_t>(n, INT64_MAX / 2));
    if (iterations_ > opt_.limits.max_loop_iterations)
        fail("the template ran more than {} loop iterations", opt_.limits.max_loop_iterations);
}

std::time_t Interpreter::now() {
    return opt_.now ? *opt_.now : std::time(nullptr);
}

void Interpreter::write(std::string_view text) {
    out_->append(text);
    if (out_->size() > opt_.limits.max_output_bytes)
        fail("the rendered output is longer than the limit of {} bytes",
             opt_.limits.max_output_bytes);
}

std::string Interpreter::capture(const Body& body, Frame& frame) {
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
        exec(body, frame);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buf;
}

MacroObject* Interpreter::make_macro(const Stmt& s, Frame& frame, std::string name) {
    MacroObject* m = heap_.make<MacroObject>();
    m->stmt = &s;
    m->closure = &frame;
    m->macro_name = std::move(name);
    if (frame.parent) frame.macros.push_back(m);  // the root frame outlives every call
    return m;
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    switch (callee.kind()) {
        case Value::Kind::Undefined:
            raise_undefined(callee);
        case Value::Kind::Callable:
            return callee.callable().call(*this, args);
        case Value::Kind::Loop:
            return call_loop(callee.loop(), args);
        default:
            fail("'{}' object is not callable", type_name(callee));
    }
}

Value Interpreter::call_loop(LoopObject& loop, CallArgs& args) {
    if (!loop.stmt->recursive)
        fail("tried to call a non-recursive loop; add the 'recursive' modifier");
    if (!loop.frame) fail("the loop has ended and cannot be called");
    if (args.positional.size() != 1 || !args.keyword.empty())
        fail("loop() takes exactly one argument");
    DepthGuard guard(*this);
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
        run_for(*loop.stmt, *loop.frame, args.positional[0], loop.depth0 + 1);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return Value::string(std::move(buf));
}

Value Interpreter::call_macro(MacroObject& m, CallArgs& args) {
    if (!m.closure)
        fail("macro '{}' can no longer be called: the scope that defined it has ended",
             m.macro_name);
    if (macro_depth_ >= opt_.limits.max_macro_depth)
        fail("macro calls nested deeper than {} (runaway recursion?)", opt_.limits.max_macro_depth);
    struct Count {
        int& n;
        explicit Count(int& c) : n(++c) {}
        ~Count() { --n; }
    } count(macro_depth_);
    const Stmt& s = *m.stmt;
    size_t np = s.params.size();
    std::vector<Value> values(np);
    std::vector<bool> given(np, false);
    for (size_t i = 0; i < np && i < args.positional.size(); ++i)
        values[i] = args.positional[i], given[i] = true;
    std::vector<Value> extra;
    if (args.positional.size() > np) {
        if (!s.uses_varargs)
            fail("macro '{}' takes not more than {} argument(s)", m.macro_name, np);
        extra.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(np),
                     args.positional.end());
    }
    Value caller;
    DictObject* kwargs = heap_.dict();
    for (const auto& kv : args.keyword) {
        const std::string& k = kv.first;
        const Value& v = kv.second;
        if (k == "caller" && s.uses_caller) {
            caller = v;
            continue;
        }
        auto it = std::find_if(s.params.begin(), s.params.end(),
                               [&](const Param& p) { return p.name == k; });
        if (it != s.params.end()) {
            size_t i = static_cast<size_t>(it - s.params.begin());
            if (given[i]) fail("macro '{}' got multiple values for argument '{}'", m.macro_name, k);
            values[i] = v, given[i] = true;
        } else if (s.uses_kwargs) {
            kwargs->set(Value::string(k), v);
        } else {
            fail("macro '{}' takes no keyword argument '{}'", m.macro_name, k);
        }
    }
    Frame f(m.closure);
    for (size_t i = 0; i < np; ++i) {
        const Param& p = s.params[i];
        Value v = given[i] ? values[i]
                  : p.default_value
                      ? eval(*p.default_value, f)
                      : Value::undefined("parameter '" + p.name + "' was not provided");
        f.set(p.name, std::move(v));
    }
    if (s.uses_varargs) f.set("varargs", heap_.new_tuple(std::move(extra)));
    if (s.uses_kwargs) f.set("kwargs", Value::dict(kwargs));
    if (s.uses_caller)
        f.set("caller", caller.is_undefined() ? Value::undefined("No caller defined") : caller);
    DepthGuard guard(*this);
    return Value::string(capture(s.body, f));
}

Interpreter::Flow Interpreter::exec(const Body& body, Frame& frame) {
    for (const auto& s : body) {
        Flow f = exec_stmt(*s, frame);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, Frame& frame) {
    try {
        DepthGuard guard(*this);
        switch (s.kind) {
            case StmtKind::Text:
                write(s.text);
                break;
            case StmtKind::Print: {
                Value v = eval(*s.expr, frame);
                if (v.is_string()) {
                    write(v.str());
                } else {
                    std::string text;
                    append_str(text, v);
                    write(text);
                }
                break;
            }
            case StmtKind::If:
                for (const auto& br : s.branches)
                    if (!br.cond || truthy(eval(*br.cond, frame))) return exec(br.body, frame);
                break;
            case StmtKind::For:
                run_for(s, frame, eval(*s.expr, frame), 0);
                break;
            case StmtKind::Set:
                assign(s.target, eval(*s.expr, frame), frame);
                break;
            case StmtKind::SetBlock: {
                Frame inner(&frame);
                Value v = Value::string(capture(s.body, inner));
                if (s.expr) v = eval_filter(*s.expr, frame, &v);
                assign(s.target, v, frame);
                break;
            }
            case StmtKind::FilterBlock: {
                Frame inner(&frame);
                Value v = Value::string(capture(s.body, inner));
                v = eval_filter(*s.expr, frame, &v);
                // jinja2 joins the block's result into the output as it is: it must be a str.
                if (!v.is_string())
                    fail("sequence item: expected str instance, {} found", type_name(v));
                write(v.str());
                break;
            }
            case StmtKind::Macro:
                frame.set(s.name, Value::callable(make_macro(s, frame, s.name)));
                break;
            case StmtKind::CallBlock: {
                MacroObject* caller = make_macro(s, frame, "caller");
                Value callerv = Value::callable(caller);
                Value v;
                try {
                    v = eval_call(*s.expr, frame, &callerv);
                } catch (...) {
                    caller->closure = nullptr;
                    throw;
                }
                caller->closure = nullptr;
                std::string text;
                append_str(text, v);
                write(text);
                break;
            }
            case StmtKind::With: {
                Frame inner(&frame);
                std::vector<Value> values;
                for (const auto& [t, e] : s.assignments) values.push_back(eval(*e, frame));
                for (size_t i = 0; i < values.size(); ++i)
                    assign(s.assignments[i].first, values[i], inner);
                return exec(s.body, inner);
            }
            case StmtKind::Scope:
                return exec(s.body, frame);
            case StmtKind::Break:
                return Flow::Break;
            case StmtKind::Continue:
                return Flow::Continue;
        }
    } catch (const RenderFailure& e) {
        throw TemplateError(s.pos, e.what());
    }
    return Flow::Normal;
}

void Interpreter::run_for(const Stmt& s, Frame& frame, const Value& iterable, int64_t depth0) {
    ListObject* items;
    if (iterable.is_list() && !is_generator(iterable)) {
        items = &iterable.list();  // read live: appends inside the loop extend it, as in Python
    } else {
        items = heap_.list();
        items->items = iterate(iterable);
    }
    if (s.cond) {
        ListObject* kept = heap_.list();
        for (size_t i = 0; i < items->items.size(); ++i) {
            count_iterations(1);
            Value item = items->items[i];
            Frame probe(&frame);
            assign(s.target, item, probe);
            if (truthy(eval(*s.cond, probe))) kept->items.push_back(std::move(item));
        }
        items = kept;
    }
    LoopObject* loop = heap_.make<LoopObject>();
    loop->items = items;
    loop->stmt = &s;
    loop->frame = &frame;
    loop->depth0 = depth0;
    // As jinja2 compiles it, `else` runs unless an iteration reached the end of the body: a
    // loop whose iterations all end in break or continue runs it too.
    bool completed = false;
    try {
        for (size_t i = 0; i < items->items.size(); ++i) {
            count_iterations(1);
            loop->index0 = static_cast<int64_t>(i);
            Frame iter(&frame);
            Value item = items->items[i];
            assign(s.target, item, iter);
            iter.set("loop", Value::loop(loop));
            Flow f = exec(s.body, iter);
            if (f == Flow::Normal) completed = true;
            if (f == Flow::Break) break;
        }
    } catch (...) {
        loop->frame = nullptr;
        throw;
    }
    loop->frame = nullptr;
    if (!completed && !s.else_body.empty()) {
        Frame inner(&frame);
        exec(s.else_body, inner);
    }
}

void Interpreter::assign(const Target& t, const Value& v, Frame& frame) {
    switch (t.kind) {
        case Target::Kind::Name:
            frame.set(t.name, v);
            return;
        case Target::Kind::Tuple: {
            std::vector<Value> items = iterate(v);
            if (items.size() < t.items.size())
                fail("not enough values to unpack (expected {}, got {})", t.items.size(),
                     items.size());
            if (items.size() > t.items.size())
                fail("too many values to unpack (expected {})", t.items.size());
            for (size_t i = 0; i < items.size(); ++i) assign(t.items[i], items[i], frame);
            return;
        }
        case Target::Kind::Attr: {
            Value ns = lookup(t.name, frame);
            if (!ns.is_namespace()) fail("cannot assign attribute on non-namespace object");
            if (!t.attr.empty() && t.attr[0] == '_')
                fail(
                    "chat templates cannot store underscore-prefixed attributes on a namespace, "
                    "but got '{}'",
                    t.attr);
            ns.ns().attrs.set(Value::string(t.attr), v);
            return;
        }
    }
}

}  // namespace myriad::jinja
