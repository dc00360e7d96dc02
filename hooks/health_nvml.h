/* hooks/health_nvml.h: the part of NVML's published API (nvml.h) that hooks/health.c uses,
 * declared by hand: collscope neither includes nor links NVML (it is dlopen()ed at run time).
 * scripts/check-nvml-abi.sh compiles tests/abi/check_nvml_header.c, which includes this file
 * next to a real nvml.h and asserts every constant, type size, struct layout and function
 * type below equal to NVML's. Names are NVML's with a CS_/cs_ prefix, so both can be seen
 * at once; CS_NVML_T(NVML's type, ours) picks ours here and NVML's in that check. */
#ifndef COLLSCOPE_HOOKS_HEALTH_NVML_H
#define COLLSCOPE_HOOKS_HEALTH_NVML_H

#ifndef CS_NVML_T
#define CS_NVML_T(theirs, ours) ours
#endif

/* X(NVML's type, ours, our name): every type a declaration below uses */
#define CS_NVML_TYPES(X) \
  X(nvmlReturn_t, int, ret) \
  X(nvmlDevice_t, struct cs_nvml_device *, device) \
  X(nvmlEventSet_t, struct cs_nvml_event_set *, event_set) \
  X(nvmlDeviceArchitecture_t, unsigned int, arch) \
  X(nvmlClockType_t, int, clock_type) \
  X(nvmlTemperatureSensors_t, int, temp_sensor) \
  X(nvmlMemoryErrorType_t, int, mem_error_type) \
  X(nvmlEccCounterType_t, int, ecc_counter_type) \
  X(nvmlEnableState_t, int, enable_state) \
  X(nvmlNvLinkErrorCounter_t, int, nvlink_error_counter)
#define CS_NVML_TYPEDEF(theirs, ours, name) typedef CS_NVML_T(theirs, ours) cs_nvml_##name##_t;
CS_NVML_TYPES(CS_NVML_TYPEDEF)

struct cs_nvml_event_data { /* nvmlEventData_t */
  cs_nvml_device_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
typedef CS_NVML_T(nvmlEventData_t, struct cs_nvml_event_data) cs_nvml_event_data_t;

/* constants (the enum values and macros of nvml.h) */
#define CS_NVML_SUCCESS 0                            /* NVML_SUCCESS */
#define CS_NVML_ERROR_TIMEOUT 10                     /* NVML_ERROR_TIMEOUT */
#define CS_NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ULL /* nvmlEventTypeXidCriticalError */
#define CS_NVML_NVLINK_MAX_LINKS 36                  /* NVML_NVLINK_MAX_LINKS (18 before NVML 13) */
#define CS_NVML_CLOCK_SM 1                           /* NVML_CLOCK_SM */
#define CS_NVML_CLOCK_MEM 2                          /* NVML_CLOCK_MEM */
#define CS_NVML_TEMPERATURE_GPU 0                    /* NVML_TEMPERATURE_GPU */
#define CS_NVML_MEMORY_ERROR_TYPE_CORRECTED 0        /* NVML_MEMORY_ERROR_TYPE_CORRECTED */
#define CS_NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1      /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED */
#define CS_NVML_VOLATILE_ECC 0                       /* NVML_VOLATILE_ECC */
#define CS_NVML_NVLINK_ERROR_DL_REPLAY 0             /* NVML_NVLINK_ERROR_DL_REPLAY */
#define CS_NVML_NVLINK_ERROR_DL_RECOVERY 1           /* NVML_NVLINK_ERROR_DL_RECOVERY */
#define CS_NVML_NVLINK_ERROR_DL_CRC_FLIT 2           /* NVML_NVLINK_ERROR_DL_CRC_FLIT */
/* clock event (throttle) reasons, nvmlClocksEventReason* / nvmlClocksThrottleReason* */
#define CS_NVML_REASON_SW_POWER_CAP 0x4ULL    /* SwPowerCap */
#define CS_NVML_REASON_HW_SLOWDOWN 0x8ULL     /* HwSlowdown */
#define CS_NVML_REASON_SW_THERMAL 0x20ULL     /* SwThermalSlowdown */
#define CS_NVML_REASON_HW_THERMAL 0x40ULL     /* HwThermalSlowdown */
#define CS_NVML_REASON_HW_POWER_BRAKE 0x80ULL /* HwPowerBrakeSlowdown */

/* X(NVML's function, our type name, parameters): the functions loaded with dlsym */
#define CS_NVML_FUNCTIONS(X) \
  X(nvmlInit_v2, init, (void)) \
  X(nvmlDeviceGetHandleByPciBusId_v2, by_bus, (const char *, cs_nvml_device_t *)) \
  X(nvmlDeviceGetName, name, (cs_nvml_device_t, char *, unsigned int)) \
  X(nvmlDeviceGetUUID, uuid, (cs_nvml_device_t, char *, unsigned int)) \
  X(nvmlDeviceGetSerial, serial, (cs_nvml_device_t, char *, unsigned int)) \
  X(nvmlDeviceGetArchitecture, arch, (cs_nvml_device_t, cs_nvml_arch_t *)) \
  X(nvmlDeviceGetPowerManagementLimit, plimit, (cs_nvml_device_t, unsigned int *)) \
  X(nvmlDeviceGetCurrentClocksEventReasons, reasons, (cs_nvml_device_t, unsigned long long *)) \
  X(nvmlDeviceGetClockInfo, clock, (cs_nvml_device_t, cs_nvml_clock_type_t, unsigned int *)) \
  X(nvmlDeviceGetPowerUsage, power, (cs_nvml_device_t, unsigned int *)) \
  X(nvmlDeviceGetTemperature, temp, (cs_nvml_device_t, cs_nvml_temp_sensor_t, unsigned int *)) \
  X(nvmlDeviceGetTotalEccErrors, ecc, \
    (cs_nvml_device_t, cs_nvml_mem_error_type_t, cs_nvml_ecc_counter_type_t, unsigned long long *)) \
  X(nvmlDeviceGetRemappedRows, remap, (cs_nvml_device_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *)) \
  X(nvmlDeviceGetNvLinkState, nvl_state, (cs_nvml_device_t, unsigned int, cs_nvml_enable_state_t *)) \
  X(nvmlDeviceGetNvLinkErrorCounter, nvl_err, \
    (cs_nvml_device_t, unsigned int, cs_nvml_nvlink_error_counter_t, unsigned long long *)) \
  X(nvmlDeviceGetPcieReplayCounter, pcie, (cs_nvml_device_t, unsigned int *)) \
  X(nvmlEventSetCreate, ev_create, (cs_nvml_event_set_t *)) \
  X(nvmlDeviceRegisterEvents, ev_register, (cs_nvml_device_t, unsigned long long, cs_nvml_event_set_t)) \
  X(nvmlEventSetWait_v2, ev_wait, (cs_nvml_event_set_t, cs_nvml_event_data_t *, unsigned int))
#define CS_NVML_FNTYPE(fn, name, params) typedef cs_nvml_ret_t(*cs_nvml_##name##_fn) params;
CS_NVML_FUNCTIONS(CS_NVML_FNTYPE)
/* nvmlDeviceGetCurrentClocksThrottleReasons (NVML before 12.2; deprecated since) has the type
 * of nvmlDeviceGetCurrentClocksEventReasons: the fallback when that one is missing */
#endif
