// A stand-in for each OpenSSL function in openssl_functions.def (x86-64 System V), so that
// pltrun links no libcrypto or libssl and loads them only when a secret, TLS or etcd's
// base64 first calls one: most single-node runs never do, and skip loading and relocating
// them (about 1.4 ms of CPU at every start on a 2-core machine, docs/PERFORMANCE.md).
//
// FUNCTION jumps through its slot. A slot starts at the function's lazy entry, which calls
// pltrun_openssl_resolve (openssl_loader.cc) with the slot's address; that loads the
// library, fills the slots of all its functions and returns this one's address, and the
// entry jumps there with the caller's registers as they came. Later calls cost one
// indirect jump, like a call through the PLT.

#define PLTRUN_OPENSSL_FUNCTION(library, name) PLTRUN_TRAMPOLINE name

        .macro PLTRUN_TRAMPOLINE name
        .text
        .p2align 4
        .globl \name
        .hidden \name
        .type \name, @function
\name:
        .cfi_startproc
        jmp *pltrun_openssl_slot_\name(%rip)
        .cfi_endproc
        .size \name, . - \name

        .p2align 4
pltrun_openssl_lazy_\name:
        .cfi_startproc
        leaq pltrun_openssl_slot_\name(%rip), %r11
        jmp pltrun_openssl_lazy_entry
        .cfi_endproc

        .data
        .p2align 3
        .globl pltrun_openssl_slot_\name
        .hidden pltrun_openssl_slot_\name
        .type pltrun_openssl_slot_\name, @object
        .size pltrun_openssl_slot_\name, 8
pltrun_openssl_slot_\name:
        .quad pltrun_openssl_lazy_\name
        .endm

#include "openssl_functions.def"

// The first call of any function: %r11 holds its slot. Every register that may carry an
// argument (integer, vector, %al's count of a variadic call) is kept across the resolver
// and restored before the jump, so the real function sees the call as it was made.
        .text
        .p2align 4
        .type pltrun_openssl_lazy_entry, @function
pltrun_openssl_lazy_entry:
        .cfi_startproc
        pushq %rdi
        .cfi_adjust_cfa_offset 8
        pushq %rsi
        .cfi_adjust_cfa_offset 8
        pushq %rdx
        .cfi_adjust_cfa_offset 8
        pushq %rcx
        .cfi_adjust_cfa_offset 8
        pushq %r8
        .cfi_adjust_cfa_offset 8
        pushq %r9
        .cfi_adjust_cfa_offset 8
        pushq %rax
        .cfi_adjust_cfa_offset 8
        // 7 pushes after the return address: %rsp is 16-byte aligned here, and stays so.
        subq $128, %rsp
        .cfi_adjust_cfa_offset 128
        movdqu %xmm0, 0(%rsp)
        movdqu %xmm1, 16(%rsp)
        movdqu %xmm2, 32(%rsp)
        movdqu %xmm3, 48(%rsp)
        movdqu %xmm4, 64(%rsp)
        movdqu %xmm5, 80(%rsp)
        movdqu %xmm6, 96(%rsp)
        movdqu %xmm7, 112(%rsp)
        movq %r11, %rdi
        call pltrun_openssl_resolve@PLT
        movq %rax, %r11
        movdqu 0(%rsp), %xmm0
        movdqu 16(%rsp), %xmm1
        movdqu 32(%rsp), %xmm2
        movdqu 48(%rsp), %xmm3
        movdqu 64(%rsp), %xmm4
        movdqu 80(%rsp), %xmm5
        movdqu 96(%rsp), %xmm6
        movdqu 112(%rsp), %xmm7
        addq $128, %rsp
        .cfi_adjust_cfa_offset -128
        popq %rax
        .cfi_adjust_cfa_offset -8
        popq %r9
        .cfi_adjust_cfa_offset -8
        popq %r8
        .cfi_adjust_cfa_offset -8
        popq %rcx
        .cfi_adjust_cfa_offset -8
        popq %rdx
        .cfi_adjust_cfa_offset -8
        popq %rsi
        .cfi_adjust_cfa_offset -8
        popq %rdi
        .cfi_adjust_cfa_offset -8
        jmp *%r11
        .cfi_endproc
        .size pltrun_openssl_lazy_entry, . - pltrun_openssl_lazy_entry

        .section .note.GNU-stack, "", @progbits
