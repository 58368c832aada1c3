"""Integer arithmetic: divisors, primes, modular powers."""


def gcd(a, b):
    """Greatest common divisor of two non-negative integers.

    >>> gcd(12, 18)
    6
    >>> gcd(7, 0)
    7
    >>> gcd(17, 5)
    1
    """
    while b:
        a, b = b, a % b
    return a


def lcm(a, b):
    """Least common multiple of two positive integers.

    >>> lcm(4, 6)
    12
    >>> lcm(5, 7)
    35
    >>> lcm(3, 3)
    3
    """
    return a // gcd(a, b) * b


def is_prime(n):
    """Tell whether ``n`` is a prime number.

    >>> is_prime(2)
    True
    >>> is_prime(1)
    False
    >>> is_prime(25)
    False
    >>> is_prime(97)
    True
    """
    if n < 2:
        return False
    divisor = 2
    while divisor * divisor <= n:
        if n % divisor == 0:
            return False
        divisor += 1
    return True


def primes_up_to(limit):
    """All primes not greater than ``limit``, by the sieve of Eratosthenes.

    >>> primes_up_to(20)
    [2, 3, 5, 7, 11, 13, 17, 19]
    >>> primes_up_to(1)
    []
    >>> primes_up_to(2)
    [2]
    """
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
    """``base ** exponent % modulus`` by repeated squaring.

    >>> mod_pow(2, 10, 1000)
    24
    >>> mod_pow(3, 0, 7)
    1
    >>> mod_pow(5, 3, 13)
    8
    """
    result = 1
    base %= modulus
    while exponent > 0:
        if exponent % 2 == 1:
            result = result * base % modulus
        base = base * base % modulus
        exponent //= 2
    return result


def digit_sum(n):
    """Sum of the decimal digits of a non-negative integer.

    >>> digit_sum(1234)
    10
    >>> digit_sum(0)
    0
    >>> digit_sum(909)
    18
    """
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total
