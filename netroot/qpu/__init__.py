"""VideoCore IV QPU smoke test: assembler, kernels, emulator, mailbox and the smoke program.

Only a real Raspberry Pi 3B proves the QPUs work. The emulator and the fake mailbox in this
package exist so the smoke program can be tested without one; their output always says so.
"""
