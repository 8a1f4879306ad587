// The include views' proof (cmake/IncludeViews.cmake; the LayerCheck tests
// in the top-level CMakeLists.txt). This file is compiled twice, by targets
// that no normal build makes:
//   gpool_layer_probe_wrong  links only gpool_scheduler: control/snapshot_schedule.h,
//                            a header of gpool_coordinator, the layer above the
//                            scheduler, is in no view it sees, so this must
//                            fail, with the header not found
//   gpool_layer_probe_right  links gpool_coordinator, which exposes the
//                            header: the same file compiles (the control, so
//                            the failure above is the include views' doing)
// The header includes only the standard library, so the control compiles in
// a moment.
#include "control/snapshot_schedule.h"

int GpoolLayerProbe() { return 0; }
