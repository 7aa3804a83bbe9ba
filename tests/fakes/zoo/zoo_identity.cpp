// tests/fakes/zoo/zoo_identity.cpp — one zoo plugin's defect and id, compiled per plugin with
// ZOO_DEFECT (a zoo::Defect name) and ZOO_ID; everything else is compiled once (zoo_defect.h).
#include "zoo_defect.h"

namespace radial::zoo {

const Defect kDefect = Defect::ZOO_DEFECT;
const char kId[] = ZOO_ID;

} // namespace radial::zoo
