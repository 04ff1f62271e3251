/* version.h - rfsck's version, printed by --version and recorded in reports. */
#ifndef RFS_VERSION_H
#define RFS_VERSION_H
#define RFSCK_VERSION "0.1.0"
#endif
