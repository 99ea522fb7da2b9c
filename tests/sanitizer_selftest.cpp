// Proof that the sanitizer runs can fail (ctest sanitizer_selftest.*): built with the same
// flags as the sanitized suite / the concurrency test, it commits the error the sanitizer is
// there to catch, and ctest expects the sanitizer's report. If a flag or an option (e.g.
// ASAN_OPTIONS=detect_leaks=1, the TSan suppressions) ever stopped the check from working, this
// test, not a silent pass, would show it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {
int g_counter = 0;
void *g_leak = nullptr;
}  // namespace

int main(int argc, char **argv) {
    if (argc == 2 && std::strcmp(argv[1], "race") == 0) {
        // Two unsynchronised increments of one int.
        std::thread t([] { ++g_counter; });
        ++g_counter;
        t.join();
        std::printf("counter %d\n", g_counter);
        return 0;
    }
    if (argc == 2 && std::strcmp(argv[1], "leak") == 0) {
        // 4 KiB allocated and the only pointer dropped before exit.
        g_leak = std::malloc(4096);
        std::memset(g_leak, 1, 4096);
        std::printf("allocated %p\n", g_leak);
        g_leak = nullptr;
        return 0;
    }
    std::fprintf(stderr, "usage: sanitizer_selftest race|leak\n");
    return 2;
}
