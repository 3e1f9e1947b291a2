/** \file
 * ShapeClass: the named class of a workload ("decode", "square", ...), as a type. The list is
 * ShapeClasses.def; the text is what tuning keys store (TuningKey::shape_class), so it is
 * stable and existing databases keep matching.
 *
 *   parse_shape_class("decode") == ShapeClass::Decode;  to_string(ShapeClass::Mlp) == "mlp"
 */
#pragma once

#include <string>

namespace tessel::autosched {

enum class ShapeClass {
#define SHAPE_CLASS(E, text) E,
#include "autoscheduler/ShapeClasses.def"
#undef SHAPE_CLASS
};

const char *to_string(ShapeClass c);
/** The class named `text`; throws std::invalid_argument naming the word and the valid ones. */
ShapeClass parse_shape_class(const std::string &text);

}  // namespace tessel::autosched
