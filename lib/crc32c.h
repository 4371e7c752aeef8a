/*
 * crc32c.h - CRC32C (Castagnoli): reflected polynomial 0x82F63B78, initial
 * value 0xFFFFFFFF, final XOR 0xFFFFFFFF, the checksum of formats/record.md.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked at run
 * time), a slicing-by-8 table otherwise. Thread-safe.
 */
#ifndef MELPIPE_CRC32C_H
#define MELPIPE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Extends crc, the CRC32C of some bytes (0 for none), with len more bytes
 * at buf, and returns the CRC32C of the whole: crc32c(0, "123456789", 9) is
 * 0xE3069283, and crc32c(crc32c(0, a, n), b, m) equals the CRC of a then b.
 * buf may be NULL when len is 0.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* The same computed with the portable table code only, whatever the CPU;
 * for tests that compare both paths. */
uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len);

/* The CRC32C of a then b from crc1 = CRC32C of a, crc2 = CRC32C of b and
 * the length of b, without b's bytes (some microseconds): lets a stage
 * that knows its payload's CRC checksum a new record around it without
 * another pass over the payload. */
uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* 1 when crc32c() uses the CPU's crc32 instruction, else 0. */
int crc32c_hw_available(void);

#endif
