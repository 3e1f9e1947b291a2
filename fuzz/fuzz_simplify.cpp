// Fuzz target: parser + the default simplification pipeline (verified after every pass). A
// StaticFailure (an op certain to fail at run time) is a UserError; the pipeline must never
// produce an invalid graph (InternalError) or crash.
#include "fuzz/FuzzTarget.h"

#include "dsl/Pipeline.h"
#include "dsl/ir/Parser.h"

using namespace tessel::dsl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        Graph g = parse(tessel::fuzz::input_text(data, size), "fuzz.tsl");
        default_pipeline().run(g);
    } catch (const UserError &) {}
    return 0;
}
