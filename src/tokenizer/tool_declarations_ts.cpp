// The encoder works in two passes, as the model's module does: each function's parameters are
// parsed into a tree first (registering $defs, resolving $ref, noticing a self reference), then
// the tree is rendered. The order matters: a $ref sees only the $defs registered before it, and
// whether `interface parameters` is emitted is known only once the root is parsed. Values are
// the Jinja interpreter's, which carry Python's semantics (truth, str(), repr(), float repr).
#include "tokenizer/tool_declarations_ts.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jinja/json.h"
#include "jinja/text.h"
#include "jinja/value.h"

namespace myriad {

namespace {

using jinja::Value;

constexpr size_t kMaxDefaultBytes = size_t{16} << 20;

template <typename... Args>
[[noreturn]] void error(fmt::format_string<Args...> f, Args&&... args) {
    throw ToolDeclarationError(fmt::format(f, std::forward<Args>(args)...));
}

const Value* member(const Value& v, std::string_view key) {
    return v.is_dict() ? v.dict().find(key) : nullptr;
}

bool is_str(const Value& v, std::string_view s) {
    return v.is_string() && v.str() == s;
}

// What Python's `for x in v` yields: a list's items, a dict's keys, a str's characters.
std::vector<Value> iterate(const Value& v) {
    if (v.is_sequence()) return v.list().items;
    std::vector<Value> out;
    if (v.is_dict()) {
        for (const auto& [k, _] : v.dict().entries) out.push_back(k);
    } else if (v.is_string()) {
        const std::string& s = v.str();
        for (size_t i = 0; i < s.size();) {
            size_t start = i;
            jinja::text::next_cp(s, i);
            out.push_back(Value::string(s.substr(start, i - start)));
        }
    } else {
        error("'{}' object is not iterable", jinja::type_name(v));
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i) out += sep;
        out += parts[i];
    }
    return out;
}

// A description as comment lines: "// " + line, except that an empty line stays empty.
std::vector<std::string> comment_lines(const Value& description, const std::string& indent) {
    if (!description.is_string())
        error("a description must be a string, not {}", jinja::repr(description));
    std::vector<std::string> out;
    std::string_view rest = description.str();
    while (true) {
        size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        out.push_back(line.empty() ? std::string() : indent + "// " + std::string(line));
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
    }
    return out;
}

// The constraint keywords printed for each kind of node, in the (ascending) order printed.
using KeyList = std::vector<std::string_view>;
const KeyList kStringKeys = {"maxLength", "minLength", "pattern"};
const KeyList kNumberKeys = {"maximum", "minimum"};
const KeyList kArrayKeys = {"maxItems", "minItems"};

// A `// Default:` value: Python's str() for bool, int and float, json.dumps for the rest.
std::string default_text(const Value& v) {
    if (v.is_bool()) return v.as_bool() ? "True" : "False";
    if (v.is_int()) return std::to_string(v.as_int());
    if (v.is_float()) return jinja::float_repr(v.as_float());
    jinja::JsonDumpOptions options;
    options.ensure_ascii = false;
    return jinja::to_json(v, options, kMaxDefaultBytes);
}

struct Property;

// A parsed schema node.
struct Node {
    enum class Kind { Text, Union, Object, Array } kind = Kind::Text;
    std::string text;                      // Text: printed as is (any, null, a name, literals)
    const KeyList* constraints = nullptr;  // scalar string / number, array: keywords shown
    std::vector<Node> children;            // Union: the branches; Array: the item; Object: the
                                           // additionalProperties schema when it is a mapping
    const Value* item_schema = nullptr;    // Array: `items` when used (for its comments)
    std::vector<Property> properties;      // Object: in the order of `properties`
    const Value* additional = nullptr;     // Object: additionalProperties unless absent/null
};

struct Property {
    std::string name;
    const Value* schema = nullptr;
    Node node;
    bool required = false;
};

Node text_node(std::string text, const KeyList* constraints = nullptr) {
    Node n;
    n.text = std::move(text);
    n.constraints = constraints;
    return n;
}

// One function: its $defs registry and whether its root refers to itself.
class FunctionEncoder {
  public:
    std::string block(const Value& function);

  private:
    Node parse(const Value& schema);
    Node parse_object(const Value& schema);
    Node parse_array(const Value& schema);
    Node parse_ref(const Value& schema);
    Node parse_enum(const Value& schema);
    Node parse_type_list(const Value& types);
    void define(const std::string& name, const Value& schema);

    std::string render(const Node& n, const std::string& indent);
    std::string render_object(const Node& n, const std::string& indent);
    std::string render_array(const Node& n, const std::string& indent);
    std::string entry(const Property& p, const std::string& indent);
    void comments(std::string& out, const Value* schema, const Node& node,
                  const std::string& indent, bool with_default);

    std::vector<std::pair<std::string, Value>> defs_;  // in first-registration order
    std::unordered_map<std::string, size_t> def_index_;
    bool parsing_root_ = false;
    bool self_ref_ = false;
};

void FunctionEncoder::define(const std::string& name, const Value& schema) {
    auto [it, added] = def_index_.emplace(name, defs_.size());
    if (added)
        defs_.emplace_back(name, schema);
    else
        defs_[it->second].second = schema;  // a repeated name keeps its place
}

Node FunctionEncoder::parse(const Value& s) {
    if (s.is_bool()) return text_node(s.as_bool() ? "any" : "null");
    if (!s.is_dict()) error("Invalid JSON Schema object: {}", jinja::repr(s));
    if (member(s, "$ref")) return parse_ref(s);
    if (const Value* any_of = member(s, "anyOf")) {
        Node n;
        n.kind = Node::Kind::Union;
        for (const Value& branch : iterate(*any_of)) n.children.push_back(parse(branch));
        return n;
    }
    if (member(s, "enum")) return parse_enum(s);
    if (const Value* type = member(s, "type")) {
        if (type->is_list()) return parse_type_list(*type);
        if (!type->is_string())
            error("Invalid JSON Schema object: type {} is neither a name nor a list of names",
                  jinja::repr(*type));
        const std::string& t = type->str();
        if (t == "object") return parse_object(s);
        if (t == "array") return parse_array(s);
        if (t == "integer") return text_node("number", &kNumberKeys);
        if (t == "number") return text_node("number", &kNumberKeys);
        if (t == "string") return text_node("string", &kStringKeys);
        return text_node(t);  // boolean, null, and unknown names pass through
    }
    if (s.dict().size() == 0) return text_node("any");
    error("Invalid JSON Schema object: {}", jinja::repr(s));
}

Node FunctionEncoder::parse_object(const Value& s) {
    Node n;
    n.kind = Node::Kind::Object;
    if (const Value* defs = member(s, "$defs")) {
        if (!defs->is_dict()) error("$defs must map names to schemas, not {}", jinja::repr(*defs));
        for (const auto& [name, schema] : defs->dict().entries) define(name.str(), schema);
    }
    if (const Value* ap = member(s, "additionalProperties"); ap && !ap->is_none()) {
        n.additional = ap;
        if (ap->is_dict()) n.children.push_back(parse(*ap));
    }
    std::vector<std::string> required;
    if (const Value* req = member(s, "required"))
        for (const Value& r : iterate(*req))
            if (r.is_string()) required.push_back(r.str());
    if (const Value* props = member(s, "properties")) {
        if (!props->is_dict())
            error("properties must map names to schemas, not {}", jinja::repr(*props));
        for (const auto& [name, schema] : props->dict().entries) {
            Property p;
            p.name = name.str();
            p.schema = &schema;
            p.node = parse(schema);
            p.required = std::find(required.begin(), required.end(), p.name) != required.end();
            n.properties.push_back(std::move(p));
        }
    }
    return n;
}

Node FunctionEncoder::parse_array(const Value& s) {
    Node n;
    n.kind = Node::Kind::Array;
    n.constraints = &kArrayKeys;
    const Value* items = member(s, "items");
    if (items && jinja::truthy(*items)) {
        n.item_schema = items;
        n.children.push_back(parse(*items));
    } else {
        n.children.push_back(text_node("any"));  // absent, {}, false, []
    }
    return n;
}

Node FunctionEncoder::parse_ref(const Value& s) {
    const Value& ref = *member(s, "$ref");
    if (!ref.is_string()) error("Unsupported reference format: {}", jinja::to_str(ref));
    std::string_view r = ref.str();
    if (r == "#") {
        // Only a reference met while the root is parsed makes the root an interface; one
        // inside a definition (parsed later) prints the name without defining it.
        if (parsing_root_) self_ref_ = true;
        return text_node("parameters");
    }
    if (r.starts_with("#/$defs/")) {
        std::string name(r.substr(r.rfind('/') + 1));
        if (!def_index_.contains(name)) error("Reference not found: {}", r);
        return text_node(name);
    }
    error("Unsupported reference format: {}", r);
}

Node FunctionEncoder::parse_enum(const Value& s) {
    std::vector<Value> values = iterate(*member(s, "enum"));
    if (const Value* type = member(s, "type")) {
        Value t = *type;
        if (t.is_list()) {
            const auto& names = t.list().items;
            if (names.size() == 1)
                t = names[0];
            else if (names.size() == 2 && (is_str(names[0], "null") || is_str(names[1], "null")))
                t = is_str(names[0], "null") ? names[1] : names[0];
            else
                error("Enum type {} is not supported", jinja::repr(t));
        }
        for (const Value& v : values) {
            if (v.is_none() || !t.is_string()) continue;
            const std::string& want = t.str();
            // isinstance semantics: bool is an int, so it passes the number checks.
            bool ok = want == "string"    ? v.is_string()
                      : want == "number"  ? v.is_int() || v.is_float() || v.is_bool()
                      : want == "integer" ? v.is_int() || v.is_bool()
                      : want == "boolean" ? v.is_bool()
                                          : true;
            if (!ok)
                error("Enum value {} is not a{} {}", jinja::to_str(v), want == "integer" ? "n" : "",
                      want);
        }
    }
    std::vector<std::string> literals;
    for (const Value& v : values)
        literals.push_back(v.is_string() ? "\"" + v.str() + "\"" : jinja::to_str(v));
    return text_node(join(literals, " | "));
}

Node FunctionEncoder::parse_type_list(const Value& types) {
    static const std::unordered_map<std::string_view, std::string_view> kNames = {
        {"string", "string"}, {"number", "number"}, {"integer", "number"},  {"boolean", "boolean"},
        {"null", "null"},     {"object", "{}"},     {"array", "Array<any>"}};
    std::vector<std::string> out;
    for (const Value& name : types.list().items) {
        auto it = name.is_string() ? kNames.find(name.str()) : kNames.end();
        if (it == kNames.end())
            error("type list names {}, which has no TypeScript form", jinja::repr(name));
        out.emplace_back(it->second);
    }
    return text_node(join(out, " | "));
}

std::string FunctionEncoder::render(const Node& n, const std::string& indent) {
    switch (n.kind) {
        case Node::Kind::Text:
            return n.text;
        case Node::Kind::Union: {
            std::vector<std::string> branches;
            for (const Node& b : n.children) branches.push_back(render(b, indent));
            return join(branches, " | ");
        }
        case Node::Kind::Object:
            return render_object(n, indent);
        case Node::Kind::Array:
            return render_array(n, indent);
    }
    return {};
}

std::string FunctionEncoder::render_object(const Node& n, const std::string& indent) {
    const std::string inner = indent + "  ";
    std::vector<const Property*> order;
    for (const Property& p : n.properties) order.push_back(&p);
    // Required fields first, each group by name in code-point order (UTF-8 byte order).
    std::stable_sort(order.begin(), order.end(), [](const Property* a, const Property* b) {
        if (a->required != b->required) return a->required;
        return a->name < b->name;
    });
    std::vector<std::string> entries;
    for (const Property* p : order) entries.push_back(entry(*p, inner));
    if (n.additional) {
        const Value& ap = *n.additional;
        std::string type;
        if (ap.is_bool())
            type = ap.as_bool() ? "any" : "never";
        else if (ap.is_dict())
            type = render(n.children[0], inner);
        else
            error("Unknown additionalProperties: {}", jinja::to_str(ap));
        entries.push_back(inner + "[k: string]: " + type);
    }
    if (entries.empty()) return "{}";
    return "{\n" + join(entries, ",\n") + "\n" + indent + "}";
}

std::string FunctionEncoder::render_array(const Node& n, const std::string& indent) {
    const std::string inner = indent + "  ";
    std::string notes;
    if (n.item_schema) comments(notes, n.item_schema, n.children[0], inner, false);
    if (notes.empty()) return "Array<" + render(n.children[0], indent) + ">";
    return "Array<\n" + notes + inner + render(n.children[0], inner) + "\n" + indent + ">";
}

std::string FunctionEncoder::entry(const Property& p, const std::string& indent) {
    std::string out;
    comments(out, p.schema, p.node, indent, true);
    out += indent + p.name + (p.required ? "" : "?") + ": " + render(p.node, indent);
    return out;
}

// The comment lines above a property (or inside Array<...> for an item), each ending in "\n":
// description, constraints, and (properties only) the default.
void FunctionEncoder::comments(std::string& out, const Value* schema, const Node& node,
                               const std::string& indent, bool with_default) {
    if (!schema->is_dict()) return;
    if (const Value* d = member(*schema, "description"); d && jinja::truthy(*d))
        for (const std::string& line : comment_lines(*d, indent)) out += line + "\n";
    if (node.constraints) {
        std::vector<std::string> pairs;
        for (std::string_view key : *node.constraints)
            if (const Value* v = member(*schema, key))
                pairs.push_back(fmt::format("{}: {}", key, jinja::to_str(*v)));
        if (!pairs.empty()) out += indent + "// " + join(pairs, ", ") + "\n";
    }
    if (!with_default) return;
    if (const Value* d = member(*schema, "default"); d && !d->is_none())
        out += indent + "// Default: " + default_text(*d) + "\n";
}

std::string FunctionEncoder::block(const Value& f) {
    std::string name = "function";
    if (const Value* n = member(f, "name")) name = jinja::to_str(*n);

    Node root;
    root.kind = Node::Kind::Object;
    if (const Value* params = member(f, "parameters"); params && jinja::truthy(*params)) {
        if (!params->is_dict())
            error("parameters must be a JSON Schema object, not {}", jinja::repr(*params));
        parsing_root_ = true;
        root = parse_object(*params);  // whatever its `type` says
        parsing_root_ = false;
    }

    std::vector<std::string> interfaces;
    if (self_ref_) {
        // The root's fields in `properties` order, without its additionalProperties line.
        std::vector<std::string> entries;
        for (const Property& p : root.properties) entries.push_back(entry(p, "  "));
        std::string body = entries.empty() ? "" : "\n" + join(entries, ",\n") + "\n";
        interfaces.push_back("interface parameters {" + body + "}");
    }
    // Definitions registered while parsing one of these are visible to the next ones but
    // are not emitted themselves.
    const auto defs = defs_;
    for (const auto& [def_name, schema] : defs) {
        if (!schema.is_dict())
            error("$defs entry '{}' must be a schema object, not {}", def_name,
                  jinja::repr(schema));
        Node def = parse(schema);
        std::string text;
        if (const Value* d = member(schema, "description"); d && jinja::truthy(*d))
            text = join(comment_lines(*d, ""), "\n") + "\n";
        interfaces.push_back(text + "interface " + def_name + " " + render(def, ""));
    }

    std::vector<std::string> parts;
    if (!interfaces.empty()) parts.push_back(join(interfaces, "\n"));
    if (const Value* d = member(f, "description"); d && jinja::truthy(*d))
        parts.push_back(join(comment_lines(*d, ""), "\n"));
    parts.push_back("type " + name +
                    " = (_: " + (self_ref_ ? std::string("parameters") : render_object(root, "")) +
                    ") => any;");
    return join(parts, "\n");
}

}  // namespace

std::string encode_tools_typescript(const nlohmann::ordered_json& tools) {
    try {
        jinja::Heap heap;
        const Value list = jinja::from_json(heap, tools);
        if (!jinja::truthy(list)) return "";
        std::vector<std::string> blocks;
        for (const Value& tool : iterate(list)) {
            if (!tool.is_dict())
                error("a tools entry must be an object, not {}", jinja::repr(tool));
            const Value* type = member(tool, "type");
            if (!type || !is_str(*type, "function")) continue;
            const Value* function = member(tool, "function");
            if (!function || !jinja::truthy(*function)) continue;
            if (!function->is_dict())
                error("a tool's function must be an object, not {}", jinja::repr(*function));
            blocks.push_back(FunctionEncoder().block(*function));
        }
        if (blocks.empty()) return "";
        return "# Tools\n\n## functions\nnamespace functions {\n" + join(blocks, "\n") + "\n}\n";
    } catch (const jinja::RenderFailure& e) {
        // From the JSON conversion (nesting, integers past 64 bits) or json.dumps of a default.
        throw ToolDeclarationError(e.what());
    }
}

}  // namespace myriad
