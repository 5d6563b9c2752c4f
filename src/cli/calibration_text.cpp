// The text `myriad quantize` runs through a model to set NVFP4's static activation scales when
// --calib is not given: a little of what a served model sees (prose, a conversation, code,
// numbers, lists, another language), written for myriad. A calibration only needs typical
// activation magnitudes, not a large corpus; users with a domain of their own pass --calib.
namespace myriad::cli {

extern const char* const kCalibrationText;
const char* const kCalibrationText =
    R"(The river had been rising for three days before anyone in the valley took it seriously. On the fourth morning the ferryman tied his boat to the old oak above the landing, walked up to the mill, and told the miller that the lower field would be under water by nightfall. The miller, who had seen floods come and go for forty years, finished weighing a sack of barley before he answered. "Then we move the grain today," he said, and by noon half the village was carrying sacks up the hill.

User: Can you explain what a hash table is, in two sentences?
Assistant: A hash table stores key-value pairs in an array and uses a hash function to turn each key into an index, so looking up, inserting or deleting a key takes constant time on average. When two keys land on the same index (a collision), the table resolves it by chaining entries in a list or by probing for another free slot.
User: And when does it get slow?
Assistant: When many keys collide, for example with a poor hash function or an almost full table, operations degrade toward linear time; resizing the table and rehashing keeps the load factor low.

def merge_sorted(a, b):
    """Merges two sorted lists into one sorted list."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i]); i += 1
        else:
            out.append(b[j]); j += 1
    return out + a[i:] + b[j:]

#include <stdio.h>
int main(void) {
    for (int i = 1; i <= 15; ++i)
        printf(i % 15 == 0 ? "FizzBuzz\n" : i % 3 == 0 ? "Fizz\n" : i % 5 == 0 ? "Buzz\n" : "%d\n", i);
    return 0;
}

Shopping list for the week: 2 kg potatoes, 1.5 l milk, 12 eggs, 500 g flour, 3 onions, a loaf of rye bread, 250 g butter, coffee (ground, medium roast), 6 apples, olive oil.

Quarterly report, Q3: revenue grew 14.2% year over year to 48.7 million, operating margin was 11.9% (Q2: 10.4%), and free cash flow reached 6.1 million. Headcount rose from 412 to 437. The board approved a dividend of 0.35 per share, payable on 15 November.

{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius", "days": 3}}
{"temperature": 21.5, "humidity": 0.64, "conditions": ["sunny", "light wind"]}

Le matin, la ville était encore silencieuse. Les boulangers ouvraient leurs portes, et l'odeur du pain chaud se répandait dans les rues étroites. Am Nachmittag regnete es, und die Kinder spielten trotzdem im Hof. 雨が止むと、空に虹がかかった。

To solve 3x + 7 = 22, subtract 7 from both sides to get 3x = 15, then divide by 3: x = 5. Check: 3 * 5 + 7 = 22. The area of a circle of radius 4 is pi * 4^2 = 16 pi, about 50.27. The sum of the integers from 1 to 100 is 100 * 101 / 2 = 5050.

1. Preheat the oven to 200 degrees.
2. Mix the flour, salt and yeast; add warm water and knead for ten minutes.
3. Let the dough rise for an hour, shape it, and bake for 35 minutes until the crust is golden.
)";

}  // namespace myriad::cli
