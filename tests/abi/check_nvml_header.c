/* tests/abi/check_nvml_header.c: collscope's hand-written NVML declarations
 * (hooks/health_nvml.h) against a real nvml.h. It compiles only when every constant equals
 * NVML's, every type has NVML's size and alignment, nvmlEventData_t has NVML's layout, and
 * every function type collscope calls through is NVML's own, parameter by parameter.
 * Built by scripts/check-nvml-abi.sh with -I DIR_OF_NVML_H; not part of the build. */
#include <nvml.h>
#include <stddef.h>

#define CS_NVML_T(theirs, ours) theirs /* our declarations in NVML's types */
#include "hooks/health_nvml.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* nvmlDeviceGetTemperature (13.0) */

#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)

/* the types: ours (int for NVML's enums, pointers to our own opaque structs) as NVML's */
#undef CS_NVML_T
#define CS_NVML_T(theirs, ours) ours
#define SAME_SIZE(theirs, ours, name) \
  _Static_assert(sizeof(theirs) == sizeof(ours) && _Alignof(theirs) == _Alignof(ours), \
                 #theirs ": collscope's " #ours " differs in size or alignment");
CS_NVML_TYPES(SAME_SIZE)

/* nvmlEventData_t, member by member */
#define SAME_MEMBER(m) \
  _Static_assert(offsetof(struct cs_nvml_event_data, m) == offsetof(nvmlEventData_t, m) && \
                     sizeof(((struct cs_nvml_event_data *)0)->m) == sizeof(((nvmlEventData_t *)0)->m), \
                 "nvmlEventData_t." #m);
SAME_MEMBER(device)
SAME_MEMBER(eventType)
SAME_MEMBER(eventData)
SAME_MEMBER(gpuInstanceId)
SAME_MEMBER(computeInstanceId)
SAME(sizeof(struct cs_nvml_event_data), sizeof(nvmlEventData_t));

/* the functions: the type collscope calls through is NVML's (in NVML's types, see above) */
#define SAME_FN(fn, name, params) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), cs_nvml_##name##_fn), #fn);
#ifndef nvmlClocksEventReasonGpuIdle /* before NVML 12.2: only the older name of the reasons call */
#define nvmlDeviceGetCurrentClocksEventReasons nvmlDeviceGetCurrentClocksThrottleReasons
#endif
CS_NVML_FUNCTIONS(SAME_FN)
_Static_assert(__builtin_types_compatible_p(__typeof__(&nvmlDeviceGetCurrentClocksThrottleReasons), cs_nvml_reasons_fn),
               "nvmlDeviceGetCurrentClocksThrottleReasons (the fallback)");

/* the constants */
SAME(CS_NVML_SUCCESS, NVML_SUCCESS);
SAME(CS_NVML_ERROR_TIMEOUT, NVML_ERROR_TIMEOUT);
SAME(CS_NVML_EVENT_TYPE_XID_CRITICAL_ERROR, (unsigned long long)nvmlEventTypeXidCriticalError);
_Static_assert(CS_NVML_NVLINK_MAX_LINKS >= NVML_NVLINK_MAX_LINKS, "NVML_NVLINK_MAX_LINKS grew");
SAME(CS_NVML_CLOCK_SM, NVML_CLOCK_SM);
SAME(CS_NVML_CLOCK_MEM, NVML_CLOCK_MEM);
SAME(CS_NVML_TEMPERATURE_GPU, NVML_TEMPERATURE_GPU);
SAME(CS_NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_CORRECTED);
SAME(CS_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
SAME(CS_NVML_VOLATILE_ECC, NVML_VOLATILE_ECC);
SAME(CS_NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_REPLAY);
SAME(CS_NVML_NVLINK_ERROR_DL_RECOVERY, NVML_NVLINK_ERROR_DL_RECOVERY);
SAME(CS_NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_FLIT);
SAME(CS_NVML_REASON_SW_POWER_CAP, (unsigned long long)nvmlClocksThrottleReasonSwPowerCap);
SAME(CS_NVML_REASON_HW_SLOWDOWN, (unsigned long long)nvmlClocksThrottleReasonHwSlowdown);
SAME(CS_NVML_REASON_SW_THERMAL, (unsigned long long)nvmlClocksThrottleReasonSwThermalSlowdown);
SAME(CS_NVML_REASON_HW_THERMAL, (unsigned long long)nvmlClocksThrottleReasonHwThermalSlowdown);
SAME(CS_NVML_REASON_HW_POWER_BRAKE, (unsigned long long)nvmlClocksThrottleReasonHwPowerBrakeSlowdown);

int cs_check_nvml_header_compiled; /* an object file that is not empty */
