// The stored responses of the Responses API (`store`, OpenAI's default), so a later request's
// `previous_response_id` continues the conversation: each id maps to the whole conversation as
// chat messages (its input history and the reply), instructions left out as OpenAI does. In
// memory, least recently used evicted past --responses-store entries; 0 stores nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace myriad::api {

class ResponsesStore {
  public:
    explicit ResponsesStore(size_t capacity) : capacity_(capacity) {}
    void put(const std::string& id, nlohmann::ordered_json messages);
    // The conversation of `id` (and marks it recently used), or nullopt: unknown or evicted.
    std::optional<nlohmann::ordered_json> get(const std::string& id);
    size_t size() const;

  private:
    using Entry = std::pair<std::string, nlohmann::ordered_json>;
    size_t capacity_;
    mutable std::mutex mutex_;
    std::list<Entry> order_;  // most recent first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace myriad::api
