// The byte limit of a render applied to lists: what one list item counts against
// RenderLimits::max_output_bytes, and the most items the render on this thread may build, for
// code that splits or iterates strings without a Context (checked before it allocates).
#pragma once

#include <cstddef>

namespace myriad::jinja {

// A Value and the shared allocation of a short string. A list of N items counts N * kItemBytes.
constexpr size_t kItemBytes = 64;

// The render's byte limit divided by kItemBytes; unlimited outside a render.
size_t max_list_items();
// Fails ("... past the limit of N bytes") when a list of `n` items would pass max_list_items().
void check_list_items(size_t n);

// Sets max_list_items() for the render on this thread while it lives.
class ListItemLimit {
  public:
    explicit ListItemLimit(size_t max_bytes);
    ~ListItemLimit();
    ListItemLimit(const ListItemLimit&) = delete;
    ListItemLimit& operator=(const ListItemLimit&) = delete;

  private:
    size_t saved_;
};

}  // namespace myriad::jinja
