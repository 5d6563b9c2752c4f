// StepSampling: how a step's logit rows pick their tokens when the backend samples on its own
// device (only the ids come back). The engine writes it from each sequence's SamplingParams;
// the sampler (engine/sampler.h) defines the arithmetic both sides follow.
#pragma once

#include <cstdint>
#include <vector>

namespace myriad {

// One change to one logit before choosing, in the sampler's order: every Repetition edit of a
// row comes before its Add edits, and those before its Masks.
struct LogitEdit {
    enum Kind : int32_t { Repetition = 0, Add = 1, Mask = 2 };
    int32_t token = 0;
    int32_t kind = Add;
    float value = 0.0f;  // Repetition: the penalty (divides a positive logit, multiplies a
                         // negative one); Add: added (penalties are negative); Mask: unused
};

struct SampleRow {
    bool greedy = true;            // argmax (lowest id on ties); the fields below are then unused
    bool host = false;             // the engine samples this row on the host from its logits
    float inv_temperature = 1.0f;  // 1 / temperature, rounded to float as the sampler does
    int32_t top_k = 0;             // 0: off
    double top_p = 1.0;
    double min_p = 0.0;
    double uniform = 0.0;                    // in [0, 1): the sampler's draw for this token
    int32_t edits_begin = 0, edits_end = 0;  // this row's edits in StepSampling::edits
    // Structured output: this row's allowed-token bitmask is masks[mask * mask_words, +
    // mask_words) (bit t % 32 of word t / 32 set: token t may be chosen; the others' logits
    // become -inf after the edits); -1: every token may be chosen.
    int32_t mask = -1;
};

struct StepSampling {
    std::vector<SampleRow> rows;  // one per logit row, in logit-row order
    std::vector<LogitEdit> edits;
    int32_t mask_words = 0;       // ceil(vocab / 32) when any row has a mask
    std::vector<uint32_t> masks;  // the masked rows' bitmasks, mask_words each
};

}  // namespace myriad
