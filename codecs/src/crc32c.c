/* CRC-32C (Castagnoli): table-driven, eight bytes per step. */
#include "internal.h"

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^ crc_table[0][crc_table[t - 1][n] & 0xff];
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t mpiucc_crc32c(uint32_t crc, const void *data, size_t size) {
    /* Concurrent first calls compute the same table: a benign, idempotent race. */
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) crc_init();
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    while (size >= 8) {
        uint32_t lo = crc ^ mpiucc_get_u32(p), hi = mpiucc_get_u32(p + 4);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
              crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        size -= 8;
    }
    while (size--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}
