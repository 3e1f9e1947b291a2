#include "autoscheduler/ShapeClass.h"

#include "support/Vocabulary.h"

namespace tessel::autosched {

namespace {

constexpr VocabularyEntry<ShapeClass> kShapeClasses[] = {
#define SHAPE_CLASS(E, text) {ShapeClass::E, text},
#include "autoscheduler/ShapeClasses.def"
#undef SHAPE_CLASS
};

}  // namespace

const char *to_string(ShapeClass c) { return vocabulary_text(kShapeClasses, c); }

ShapeClass parse_shape_class(const std::string &text) { return vocabulary_parse(kShapeClasses, text, "shape class"); }

}  // namespace tessel::autosched
