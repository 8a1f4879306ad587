// One exported trampoline per driver symbol the interposer does not govern
// (driver_symbols.inc), so a program or the CUDA runtime that looks any
// driver name up in "libcuda.so.1" finds it here and lands in the real
// driver with its arguments untouched.
//
// Why assembly: a forwarder must not need the function's signature (the
// list has 600+ names, many with structs passed by value), so it cannot be
// C++. Each trampoline is "load my slot; if set, jump there", an indirect
// tail jump that leaves every argument register and the stack as the caller
// made them. A slot starts empty and is filled on the first call, through
// one shared slow path that saves the argument registers, resolves the name
// with dlsym on the real driver and jumps: lazily, so loading the library
// costs no 600 lookups, and a name the installed driver lacks only matters
// if it is called (then it answers CUDA_ERROR_NOT_FOUND, logged once).
//
// x86-64 (System V ABI) and AArch64 (AAPCS64; the AArch64 version is
// assembled but has not run on hardware yet). This file is kept out of
// unity builds: the trampolines number themselves with __COUNTER__.
#include <dlfcn.h>

#include <atomic>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "gpool's CUDA interposer trampolines are written for x86-64 and AArch64 only"
#endif

namespace {

constexpr const char* kForwardNames[] = {
#define GPOOL_CUDA_FORWARD(name) #name,
#include "worker/cuda/driver_symbols.inc"
#undef GPOOL_CUDA_FORWARD
};
constexpr unsigned kForwardCount = sizeof(kForwardNames) / sizeof(kForwardNames[0]);

CUresult MissingSymbol() { return CUDA_ERROR_NOT_FOUND; }
CUresult UnsupportedRemotely() { return CUDA_ERROR_NOT_SUPPORTED; }

}  // namespace

extern "C" {

// Read by the trampolines: a plain load, ordered by the address dependency
// of the jump through it (the release store below publishes it).
__attribute__((visibility("hidden"))) void* gpool_cuda_forward_slots[kForwardCount];

// Called by the slow path with the trampoline's index; returns where to jump.
__attribute__((visibility("hidden"), used)) void* gpool_cuda_resolve_forward(unsigned long index) {
  if (index >= kForwardCount) return reinterpret_cast<void*>(&MissingSymbol);
  void* target = gpool::cuda::RealSymbol(kForwardNames[index]);
  if (target == nullptr) {
    // Logged once: the slot then holds the answer.
    const bool remote = gpool::cuda::MissingDriverSymbol(kForwardNames[index]) == CUDA_ERROR_NOT_SUPPORTED;
    target = reinterpret_cast<void*>(remote ? &UnsupportedRemotely : &MissingSymbol);
  }
  __atomic_store_n(&gpool_cuda_forward_slots[index], target, __ATOMIC_RELEASE);
  return target;
}

}  // extern "C"

#define GPOOL_CUDA_STR2(x) #x
#define GPOOL_CUDA_STR(x) GPOOL_CUDA_STR2(x)

#if defined(__x86_64__)

// The slow path: %r11 holds the trampoline's index. Saves the integer and
// vector argument registers (and %rax, the vector count of a variadic
// call), keeps the stack 16-byte aligned for the call, restores them and
// jumps to the resolved function, which then sees the caller's frame.
asm(R"(
  .text
  .p2align 4
  .type gpool_cuda_forward_slow, @function
  .hidden gpool_cuda_forward_slow
gpool_cuda_forward_slow:
  pushq %rbp
  movq %rsp, %rbp
  pushq %rdi
  pushq %rsi
  pushq %rdx
  pushq %rcx
  pushq %r8
  pushq %r9
  pushq %rax
  subq $136, %rsp
  movdqu %xmm0, 0(%rsp)
  movdqu %xmm1, 16(%rsp)
  movdqu %xmm2, 32(%rsp)
  movdqu %xmm3, 48(%rsp)
  movdqu %xmm4, 64(%rsp)
  movdqu %xmm5, 80(%rsp)
  movdqu %xmm6, 96(%rsp)
  movdqu %xmm7, 112(%rsp)
  movq %r11, %rdi
  call gpool_cuda_resolve_forward
  movq %rax, %r11
  movdqu 0(%rsp), %xmm0
  movdqu 16(%rsp), %xmm1
  movdqu 32(%rsp), %xmm2
  movdqu 48(%rsp), %xmm3
  movdqu 64(%rsp), %xmm4
  movdqu 80(%rsp), %xmm5
  movdqu 96(%rsp), %xmm6
  movdqu 112(%rsp), %xmm7
  addq $136, %rsp
  popq %rax
  popq %r9
  popq %r8
  popq %rcx
  popq %rdx
  popq %rsi
  popq %rdi
  popq %rbp
  jmp *%r11
  .size gpool_cuda_forward_slow, .-gpool_cuda_forward_slow
  .set .Lgpool_cuda_forward_base, )" GPOOL_CUDA_STR(__COUNTER__) R"(
)");

// Trampoline number i is the i-th name of driver_symbols.inc: __COUNTER__
// (expanded once per name, as a macro argument) counts up from the base
// taken just above, in the same order as kForwardNames.
#define GPOOL_CUDA_TRAMPOLINE(name, n)                                                             \
  asm(".text\n .p2align 4\n .globl " #name "\n .type " #name ", @function\n" #name ":\n"         \
      " movq gpool_cuda_forward_slots+8*(" GPOOL_CUDA_STR(n) "-.Lgpool_cuda_forward_base-1)(%rip), %r11\n" \
      " testq %r11, %r11\n jz 1f\n jmp *%r11\n"                                                    \
      "1: movq $(" GPOOL_CUDA_STR(n) "-.Lgpool_cuda_forward_base-1), %r11\n"                       \
      " jmp gpool_cuda_forward_slow\n .size " #name ", .-" #name "\n");

#elif defined(__aarch64__)

// The slow path: x16 (IP0, free to use in a veneer) holds the trampoline's
// index. Saves x0-x8 (x8: the indirect result address) and q0-q7, calls the
// resolver, restores them and branches to the function through x16, which
// BTI accepts as a call target.
asm(R"(
  .text
  .p2align 4
  .type gpool_cuda_forward_slow, %function
  .hidden gpool_cuda_forward_slow
gpool_cuda_forward_slow:
  stp x29, x30, [sp, #-224]!
  mov x29, sp
  stp x0, x1, [sp, #16]
  stp x2, x3, [sp, #32]
  stp x4, x5, [sp, #48]
  stp x6, x7, [sp, #64]
  str x8, [sp, #80]
  stp q0, q1, [sp, #96]
  stp q2, q3, [sp, #128]
  stp q4, q5, [sp, #160]
  stp q6, q7, [sp, #192]
  mov x0, x16
  bl gpool_cuda_resolve_forward
  mov x16, x0
  ldp q6, q7, [sp, #192]
  ldp q4, q5, [sp, #160]
  ldp q2, q3, [sp, #128]
  ldp q0, q1, [sp, #96]
  ldr x8, [sp, #80]
  ldp x6, x7, [sp, #64]
  ldp x4, x5, [sp, #48]
  ldp x2, x3, [sp, #32]
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #224
  br x16
  .size gpool_cuda_forward_slow, .-gpool_cuda_forward_slow
  .set .Lgpool_cuda_forward_base, )" GPOOL_CUDA_STR(__COUNTER__) R"(
)");

#define GPOOL_CUDA_TRAMPOLINE(name, n)                                                                   \
  asm(".text\n .p2align 4\n .globl " #name "\n .type " #name ", %function\n" #name ":\n"             \
      " adrp x16, gpool_cuda_forward_slots+8*(" GPOOL_CUDA_STR(n) "-.Lgpool_cuda_forward_base-1)\n"      \
      " ldr x16, [x16, #:lo12:gpool_cuda_forward_slots+8*(" GPOOL_CUDA_STR(n) "-.Lgpool_cuda_forward_base-1)]\n" \
      " cbz x16, 1f\n br x16\n"                                                                            \
      "1: mov x16, #(" GPOOL_CUDA_STR(n) "-.Lgpool_cuda_forward_base-1)\n"                               \
      " b gpool_cuda_forward_slow\n .size " #name ", .-" #name "\n");

#endif

#define GPOOL_CUDA_FORWARD(name) GPOOL_CUDA_TRAMPOLINE(name, __COUNTER__)
#include "worker/cuda/driver_symbols.inc"
#undef GPOOL_CUDA_FORWARD
