"""Dense matrices as lists of rows."""


def identity(n):
    """The n-by-n identity matrix."""
    return [[1 if i == j else 0 for j in range(n + 1)] for i in range(n)]


def transpose(matrix):
    """Rows become columns."""
    rows, cols = len(matrix), len(matrix[0])
    return [[matrix[i][j] for i in range(rows)] for j in range(cols)]


def multiply(a, b):
    """Matrix product of ``a`` (n by m) and ``b`` (m by p)."""
    inner = len(b)
    result = []
    for row in a:
        out = []
        for j in range(len(b[0])):
            total = 0
            for k in range(inner):
                total += row[k] * b[k][j]
            out.append(total)
        result.append(out)
    return result


def trace(matrix):
    """Sum of the main diagonal of a square matrix."""
    total = 0
    for i in range(len(matrix)):
        total += matrix[i][i]
    return total


def power(matrix, exponent):
    """A square matrix raised to a non-negative integer power."""
    result = identity(len(matrix))
    while exponent > 0:
        if exponent % 2 == 1:
            result = multiply(result, matrix)
        matrix = multiply(matrix, matrix)
        exponent //= 2
    return result


def determinant_2x2(matrix):
    """Determinant of a 2-by-2 matrix."""
    return matrix[0][0] * matrix[1][1] - matrix[0][1] * matrix[1][0]
