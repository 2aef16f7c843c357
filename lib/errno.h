/* SPDX-License-Identifier: MIT */
/* Error numbers: functions return 0 or a negative one of these. */
#ifndef LIB_ERRNO_H
#define LIB_ERRNO_H

#define EPERM  1  /* not allowed */
#define ENOENT 2  /* no such thing (mapping, tag, option) */
#define ESRCH  3  /* no such task */
#define EBADF  9  /* not a handle of this task (closed, stale, forged) */
#define ENOMEM 12 /* out of memory */
#define EFAULT 14 /* bad address */
#define EBUSY  16 /* in use */
#define EEXIST 17 /* already there */
#define EINVAL 22 /* bad argument */
#define EMFILE 24 /* the task's handle table is full */
#define ERANGE 34 /* out of range */
#define ENOSYS 38 /* no such system call */
#define EIDRM  43 /* the object was revoked */

#endif
