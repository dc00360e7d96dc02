/* hooks/sdc_kernels_host.c: the host twin of the SDC kernel -- the same source as the
 * GPU fatbin (sdc_kernels.cu), compiled as C into libcollscope, where the simulator's
 * cuModuleGetFunction finds collscope_simkernel_sdc_reduce by dlsym. */
#include "sdc_kernels.cu"
