// What the fake libcuda.so.1 (fake_cuda.cc) counts, read through its
// fakeCudaGetStats export: a test that sees these move knows its calls
// reached the driver behind the interposer, and how long kernels really ran.
#pragma once

extern "C" {

struct FakeCudaStats {
  unsigned long long launches;        // kernels run
  unsigned long long kernel_ns;       // their summed run time (nominal on the kernel clock)
  unsigned long long alloc_calls;     // allocation calls that reached the fake
  unsigned long long get_info_calls;  // cuMemGetInfo_v2 calls that reached the fake
  unsigned long long event_records;   // cuEventRecord(_ptsz) calls: events the interposer measured with
  // What "NVML" sees on the calling thread's current device: all the memory
  // the fake holds there, and the part of it that contexts, modules and
  // streams hold (FAKE_CUDA_OBJECT_COSTS); 0 with no current context.
  unsigned long long used_bytes;
  unsigned long long object_bytes;
  unsigned long long object_calls;    // context, module and stream creations that reached the fake
};

using fakeCudaGetStats_fn = void (*)(FakeCudaStats*);

// Between the fake's own files (fake_cuda.cc, fake_cuda_events.cc).
unsigned long long fakeCudaKernelNs();
unsigned long long fakeCudaEventRecords();
int fakeCudaKernelClock();  // FAKE_CUDA_EVENT_CLOCK=kernels: 1

}  // extern "C"
