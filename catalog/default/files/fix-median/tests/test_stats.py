import unittest

from stats import median


class MedianTest(unittest.TestCase):
    def test_single_value(self):
        self.assertEqual(median([7]), 7)

    def test_odd_count_unsorted(self):
        self.assertEqual(median([9, 1, 5]), 5)

    def test_even_count_is_the_mean_of_the_middle_values(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_empty_is_an_error(self):
        with self.assertRaises(ValueError):
            median([])


if __name__ == "__main__":
    unittest.main()
