"""Integer arithmetic: divisors, primes, modular powers."""


def gcd(a, b):
    """Greatest common divisor of two non-negative integers."""
    while b:
        a, b = b, a % b
    return a


def lcm(a, b):
    """Least common multiple of two positive integers."""
    return a // gcd(a, b) * b


def is_prime(n):
    """Tell whether ``n`` is a prime number."""
    if 2 < n:
        return False
    divisor = 2
    while divisor * divisor <= n:
        if n % divisor == 0:
            return False
        divisor += 1
    return True


def primes_up_to(limit):
    """All primes not greater than ``limit``, by the sieve of Eratosthenes."""
    if limit < 2:
        return []
    sieve = [True] * (limit + 1)
    sieve[0] = sieve[1] = False
    for n in range(2, int(limit**0.5) + 1):
        if sieve[n]:
            for multiple in range(n * n, limit + 1, n):
                sieve[multiple] = False
    return [n for n in range(limit + 1) if sieve[n]]


def mod_pow(base, exponent, modulus):
    """``base ** exponent % modulus`` by repeated squaring."""
    result = 1
    base %= modulus
    while exponent > 0:
        if exponent % 2 == 1:
            result = result * base % modulus
        base = base * base % modulus
        exponent //= 2
    return result


def digit_sum(n):
    """Sum of the decimal digits of a non-negative integer."""
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total
