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

}  // namespace myriad::api
