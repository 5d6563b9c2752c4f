#include "hub/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "util/error.h"

namespace myriad::hub {

namespace {

double env_number(const char* name, double fallback, double min, double max) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const double d = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(d) || d < min || d > max)
        bad_input("environment variable {}={}: expected a number from {} to {}", name, v, min, max);
    return d;
}

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
    const HttpRequest* request;
    HttpResponse* response;
    bool too_big = false;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
        t->response->headers.clear();  // a new response of a redirect chain
        return size * n;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * n;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
        value.remove_suffix(1);
    t->response->headers[name] = std::string(value);
    return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t bytes = size * n;
    if (t->request->sink) return t->request->sink(data, bytes) ? bytes : 0;
    if (t->response->body.size() + bytes > t->request->max_body) {
        t->too_big = true;
        return 0;
    }
    t->response->body.append(data, bytes);
    return bytes;
}

}  // namespace

HttpSettings HttpSettings::from_env() {
    HttpSettings s;
    s.timeout_s = env_number("MYRIAD_HUB_TIMEOUT", s.timeout_s, 0.1, 3600);
    s.retries = static_cast<int>(env_number("MYRIAD_HUB_RETRIES", s.retries, 0, 100));
    s.backoff_s = env_number("MYRIAD_HUB_BACKOFF", s.backoff_s, 0, 600);
    if (const char* t = std::getenv("HF_TOKEN")) s.token = t;
    return s;
}

bool HttpResponse::transient() const {
    if (status == 0) return true;  // no answer: connection refused, reset, timed out
    return status == 408 || status == 429 || status >= 500;
}

std::string HttpResponse::describe() const {
    if (status == 0) return error.empty() ? "no response" : error;
    return fmt::format("HTTP {}", status);
}

std::string url_encode(std::string_view s, bool keep_slash) {
    std::string out;
    for (unsigned char ch : s) {
        if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' ||
            (keep_slash && ch == '/'))
            out += static_cast<char>(ch);
        else
            out += fmt::format("%{:02X}", ch);
    }
    return out;
}

HttpResponse http_once(const HttpRequest& req, const HttpSettings& settings) {
    global_init();
    HttpResponse resp;
    Transfer t{&req, &resp};
    CURL* curl = curl_easy_init();
    if (!curl) internal_error("libcurl could not start a request");
    char errbuf[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "myriad/0 (hub client)");
    const long timeout_ms = std::max(1L, static_cast<long>(settings.timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    // A stalled transfer (under 1 byte/s for the timeout) is abandoned; small requests also have
    // a total bound.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(std::ceil(settings.timeout_s))));
    if (req.small) curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (req.head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    std::string range;
    if (req.range) {
        range = fmt::format("{}-{}", req.range->first, req.range->second);
        curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    }
    curl_slist* headers = nullptr;
    const std::string auth = "Authorization: Bearer " + settings.token;
    // curl drops custom Authorization headers on redirects to another host (the content host
    // must not see the token) since 7.58 unless CURLOPT_UNRESTRICTED_AUTH is set.
    if (!settings.token.empty()) headers = curl_slist_append(headers, auth.c_str());
    if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    const CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp.status);
    char* final_url = nullptr;
    curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &final_url);
    if (final_url) resp.url = final_url;
    if (rc != CURLE_OK) {
        resp.error = t.too_big ? fmt::format("the answer is larger than {} bytes", req.max_body)
                               : std::string(errbuf[0] ? errbuf : curl_easy_strerror(rc));
        // A transfer cut short is no answer, whatever status line came before it.
        resp.status = 0;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return resp;
}

void backoff_sleep(const HttpSettings& s, int attempt) {
    const double seconds = std::min(60.0, s.backoff_s * std::pow(2.0, attempt - 1));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

HttpResponse http_with_retries(const HttpRequest& req, const HttpSettings& s,
                               const std::function<void()>& on_retry) {
    HttpResponse resp;
    for (int attempt = 0;; ++attempt) {
        if (attempt > 0) {
            backoff_sleep(s, attempt);
            if (on_retry) on_retry();
        }
        resp = http_once(req, s);
        if (!resp.transient() || attempt >= s.retries) return resp;
    }
}

}  // namespace myriad::hub
