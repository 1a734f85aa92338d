//! The two devices the kernel uses: COM1 for output and QEMU's isa-debug-exit to stop.

use core::arch::asm;
use core::fmt;

const COM1: u16 = 0x3f8;
const LINE_STATUS: u16 = COM1 + 5;
const TRANSMIT_EMPTY: u8 = 1 << 5;
const DEBUG_EXIT: u16 = 0xf4;

fn outb(port: u16, value: u8) {
    // SAFETY: port I/O to COM1, which QEMU emulates; it touches no memory.
    unsafe { asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack)) }
}

fn inb(port: u16) -> u8 {
    let value: u8;
    // SAFETY: reads COM1's line status register; it touches no memory.
    unsafe { asm!("in al, dx", in("dx") port, out("al") value, options(nomem, nostack)) }
    value
}

/// COM1, written byte by byte once the transmitter is empty (bounded: QEMU's UART is
/// always ready, a missing one is given up on).
pub struct Serial;

impl fmt::Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for byte in s.bytes() {
            let mut spins = 0u32;
            while inb(LINE_STATUS) & TRANSMIT_EMPTY == 0 && spins < 100_000 {
                spins += 1;
            }
            outb(COM1, byte);
        }
        Ok(())
    }
}

/// Stops QEMU: its exit status becomes `(code << 1) | 1`.
pub fn exit(code: u32) -> ! {
    // SAFETY: a write to the isa-debug-exit device, which ends the virtual machine.
    unsafe { asm!("out dx, eax", in("dx") DEBUG_EXIT, in("eax") code, options(nomem, nostack)) }
    // Without the device (run by hand), halt.
    loop {
        // SAFETY: hlt stops the CPU until an interrupt; interrupts are off, so for good.
        unsafe { asm!("hlt", options(nomem, nostack)) }
    }
}

/// Success: QEMU exits with status 33.
pub const EXIT_OK: u32 = 0x10;
/// A self-test failed: status 35.
pub const EXIT_FAILED: u32 = 0x11;
/// A panic: status 37.
pub const EXIT_PANIC: u32 = 0x12;
