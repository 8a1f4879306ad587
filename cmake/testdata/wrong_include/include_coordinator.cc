// The include views' proof (cmake/IncludeViews.cmake; the LayerCheck tests
// in the top-level CMakeLists.txt). This file is compiled twice, in targets
// that no normal build makes:
//   gpool_layer_probe_wrong  links only gpool_scheduler: control/coordinator.h,
//                            a layer above the scheduler, is in no view it
//                            sees, so this must fail, with the header not found
//   gpool_layer_probe_right  links gpool_coordinator, which exposes the
//                            header: the same file compiles (the control, so
//                            the failure above is the include view's doing)
#include "control/coordinator.h"

int GpoolLayerProbe() { return 0; }
