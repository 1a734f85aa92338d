# Entry from QEMU's PVH boot: 32-bit protected mode, paging off, flat segments.
# Zero .bss, identity-map the first 1 GiB with 2 MiB pages, enter long mode, call
# kernel_main on a static stack.

    .section .note.pvh, "a"
    .p2align 2
    .long 4                     # name size ("Xen\0")
    .long 4                     # descriptor size
    .long 18                    # XEN_ELFNOTE_PHYS32_ENTRY
    .asciz "Xen"
    .long pvh_start             # 32-bit physical entry point

    .section .text.boot, "ax"
    .code32
    .global pvh_start
pvh_start:
    cli
    cld
    # .bss holds the page tables and the stack: clear it first.
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    shr $2, %ecx
    xor %eax, %eax
    rep stosl
    # 512 page-directory entries: 2 MiB pages, present + writable + large.
    mov $boot_pd, %edi
    mov $0x83, %eax
    mov $512, %ecx
1:  mov %eax, (%edi)
    add $0x200000, %eax
    add $8, %edi
    loop 1b
    mov $boot_pdpt, %eax
    or $3, %eax
    mov %eax, boot_pml4
    mov $boot_pd, %eax
    or $3, %eax
    mov %eax, boot_pdpt
    # PAE, the tables, EFER.LME, then paging: long mode (compatibility) is active.
    mov %cr4, %eax
    or $(1 << 5), %eax
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $(1 << 8), %eax
    wrmsr
    mov %cr0, %eax
    or $0x80000001, %eax
    mov %eax, %cr0
    lgdt boot_gdt_ptr
    ljmp $0x08, $long_mode

    .code64
long_mode:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    mov $boot_stack_top, %rsp
    call kernel_main
2:  hlt
    jmp 2b

    .section .rodata.boot, "a"
    .p2align 3
boot_gdt:
    .quad 0                     # null
    .quad 0x00209A0000000000    # 64-bit code, ring 0
    .quad 0x0000920000000000    # data
boot_gdt_ptr:
    .word boot_gdt_ptr - boot_gdt - 1
    .long boot_gdt

    .section .bss.boot, "aw", @nobits
    .p2align 12
boot_pml4:
    .skip 4096
boot_pdpt:
    .skip 4096
boot_pd:
    .skip 4096
    .p2align 4
boot_stack:
    .skip 1 << 20               # 1 MiB: the CID self-test keeps 64 spaces on it
boot_stack_top:
