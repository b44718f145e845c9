"""What the Python tests share: check() and raises() print one "ok:" or
"FAIL:" line each and count the failures; finish() exits 1 if any."""
import sys

fails = 0


def check(cond, what):
    global fails
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails += 1


def raises(exc, fn, what):
    """fn() must raise exc: the exception, else None (a failure counted)."""
    try:
        fn()
    except exc as e:
        check(True, f"{what}: {type(e).__name__}: {e}")
        return e
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: {type(e).__name__} instead of {exc.__name__}: {e}")
        return None
    check(False, f"{what}: nothing raised")
    return None


def finish(summary=""):
    print(f"{summary}{', ' if summary else ''}{fails} failures")
    sys.exit(1 if fails else 0)
