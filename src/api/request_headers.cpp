#include "api/request_headers.h"

namespace myriad::api {

namespace {
thread_local const RequestHeaders* t_headers = nullptr;
}

const RequestHeaders* current_request_headers() {
    return t_headers;
}

ScopedRequestHeaders::ScopedRequestHeaders(const RequestHeaders& h) : previous_(t_headers) {
    t_headers = &h;
}

ScopedRequestHeaders::~ScopedRequestHeaders() {
    t_headers = previous_;
}

}  // namespace myriad::api
