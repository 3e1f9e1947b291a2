// Fuzz target: the TSL parser. Every input parses or is refused with a UserError whose message
// is escaped (no raw control bytes), and whatever parses prints and parses back to the same text.
#include "fuzz/FuzzTarget.h"

#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/Verifier.h"

#include <cstdlib>

using namespace tessel::dsl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text = tessel::fuzz::input_text(data, size);
    Graph g;
    try {
        g = parse(text, "fuzz.tsl");
    } catch (const UserError &e) {
        for (char c : format_error(e))
            if ((unsigned char)c < 0x20 && c != '\n') std::abort();  // a raw byte in a diagnostic
        return 0;
    }
    if (!verify(g).empty()) std::abort();  // the parser built an invalid graph
    const std::string once = print(g);
    if (print(parse(once, "printed.tsl")) != once) std::abort();  // print/parse must round-trip
    return 0;
}
