// Splits a model's decoded output, arriving in chunks of any size, into text and markers
// (special-token strings such as `<think>` or `<|tool_call_begin|>`). A chunk's end that may be
// the start of a marker, or of a UTF-8 character, is held back until the next chunk decides it,
// so the pieces do not depend on where the chunks were cut: at each position the longest marker
// that matches wins, and text is emitted as valid UTF-8 (invalid bytes become U+FFFD, as the
// replacing decoders write them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace myriad::api {

class MarkerLexer {
  public:
    struct Piece {
        int marker;        // index into the marker list, or -1 for text
        std::string text;  // the text, or the marker's spelling
    };

    explicit MarkerLexer(std::vector<std::string> markers);

    // Appends `chunk`; appends the pieces it decides to `out`.
    void feed(std::string_view chunk, std::vector<Piece>& out);
    // End of the output: whatever was held back is text.
    void finish(std::vector<Piece>& out);

    const std::string& marker(int index) const { return markers_[index]; }

  private:
    enum class Match { None, Full, Partial };
    // What starts at buffer_[i]: a whole marker (its index in `*marker`), the start of one that
    // the buffer's end cuts off, or neither.
    Match match_at(size_t i, int* marker) const;
    void emit_text(size_t begin, size_t end, std::vector<Piece>& out) const;

    std::vector<std::string> markers_;
    bool first_byte_[256] = {};
    std::string buffer_;  // held back: a possible marker start or an unfinished character
};

}  // namespace myriad::api
