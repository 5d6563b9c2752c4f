#include "cli/bench_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// The text a chunk carries: completions' choices[].text, chat's delta content, reasoning or
// tool-call arguments.
bool carries_text(const nlohmann::json& j) {
    if (!j.contains("choices") || !j["choices"].is_array()) return false;
    for (const auto& c : j["choices"]) {
        if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty())
            return true;
        if (!c.contains("delta") || !c["delta"].is_object()) continue;
        const auto& d = c["delta"];
        for (const char* k : {"content", "reasoning_content", "reasoning"})
            if (d.contains(k) && d[k].is_string() && !d[k].get<std::string>().empty()) return true;
        if (d.contains("tool_calls") && d["tool_calls"].is_array() && !d["tool_calls"].empty())
            return true;
    }
    return false;
}

struct Transfer {
    SseTimer* timer;
    std::string error_body;
    long status = 0;
    CURL* curl;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    if (t->status == 0) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->status != 200) {
        if (t->error_body.size() < 4096) t->error_body.append(data, size * n);
    } else {
        t->timer->feed(std::string_view(data, size * n), Clock::now());
    }
    return size * n;
}

}  // namespace

void SseTimer::feed(std::string_view bytes, Clock::time_point now) {
    buf_.append(bytes);
    size_t pos;
    while ((pos = buf_.find('\n')) != std::string::npos) {
        std::string line = buf_.substr(0, pos);
        buf_.erase(0, pos + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.starts_with("data:")) {
            std::string_view d = std::string_view(line).substr(5);
            while (!d.empty() && d.front() == ' ') d.remove_prefix(1);
            event(d, now);
        }
    }
}

void SseTimer::event(std::string_view data, Clock::time_point now) {
    if (data == "[DONE]") {
        done_ = true;
        return;
    }
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded()) return;
    if (j.contains("error")) {
        t_.error = j["error"].is_object() && j["error"].contains("message")
                       ? j["error"]["message"].dump()
                       : j["error"].dump();
        return;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
        const auto& u = j["usage"];
        if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
            t_.prompt_tokens = u["prompt_tokens"].get<int64_t>();
        if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
            t_.completion_tokens = u["completion_tokens"].get<int64_t>();
    }
    if (!carries_text(j)) return;
    if (first_) {
        t_.ttft_s = seconds(now - start_);
        first_ = false;
    } else {
        t_.itl.push_back(seconds(now - last_));
    }
    last_ = now;
    ++t_.chunks;
}

StreamTiming stream_request(const std::string& url, const nlohmann::json& body,
                            const std::string& api_key, double timeout_s) {
    StreamTiming t;
    CURL* curl = curl_easy_init();
    if (!curl) {
        t.error = "libcurl could not start a request";
        return t;
    }
    const std::string payload = body.dump();
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: text/event-stream");
    const std::string auth = "Authorization: Bearer " + api_key;
    if (!api_key.empty()) headers = curl_slist_append(headers, auth.c_str());
    char errbuf[CURL_ERROR_SIZE] = {};
    const auto start = Clock::now();
    SseTimer timer(t, start);
    Transfer tr{&timer, {}, 0, curl};
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &tr);
    const CURLcode rc = curl_easy_perform(curl);
    t.latency_s = seconds(Clock::now() - start);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK) {
        t.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    } else if (status != 200) {
        std::string msg = tr.error_body.substr(0, 200);
        for (char& ch : msg)
            if (ch == '\n' || ch == '\r') ch = ' ';
        t.error = fmt::format("HTTP {}: {}", status, msg);
    } else if (!timer.done() && t.error.empty()) {
        t.error = "the stream ended without [DONE]";
    } else if (t.chunks == 0 && t.error.empty()) {
        t.error = "no tokens came back";
    }
    t.ok = t.error.empty();
    return t;
}

}  // namespace myriad::cli
