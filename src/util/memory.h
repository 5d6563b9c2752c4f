#pragma once

namespace myriad {

// Returns freed heap memory to the operating system (glibc's malloc_trim); a no-op elsewhere.
void release_free_memory();

}  // namespace myriad
