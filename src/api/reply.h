// What an endpoint answers: a JSON body with its status, or an event stream the HTTP layer
// pumps to the client (write returns false once the client is gone).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace myriad::api {

using StreamWriter = std::function<bool(std::string_view)>;

struct Reply {
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
    std::function<void(const StreamWriter& write)> stream;  // set: text/event-stream
};

}  // namespace myriad::api
