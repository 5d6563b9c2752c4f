#include "api/sse.h"

namespace myriad::api {

std::string sse_event(std::string_view json) {
    std::string out;
    out.reserve(json.size() + 8);
    out += "data: ";
    out += json;  // JSON text has no raw newlines: one data line
    out += "\n\n";
    return out;
}

std::string sse_named_event(std::string_view type, std::string_view json) {
    std::string out = "event: ";
    out += type;
    out += "\n";
    out += sse_event(json);
    return out;
}

}  // namespace myriad::api
