/* The DiLoCo outer update (train/outer.h, outer_apply) against torch.optim.SGD's rule worked by hand: two
   steps with and without Nesterov momentum, on values whose every product and sum is exact in binary
   (multiples of 1/64), so the result must be equal bit for bit whatever the compiler fuses; and lr 1,
   momentum 0 turning kept into the mean of the ranks' parameters. */
#include "train/outer.h"

#include "tests/testutil.h"

/* torch.optim.SGD(momentum=mu, nesterov=nest, dampening=0), two steps with gradients d1 then d2, from p0:
   buf = mu buf + d (buf = d on the first step); d' = d + mu buf (nesterov) or buf; p -= lr d' */
static void two_steps(bool nesterov, const real* want) {
    real kept[2] = {1.0f, -0.5f}, mom[2] = {0, 0};
    const real d1[2] = {0.25f, -0.125f}, d2[2] = {0.5f, 0.0625f};
    outer_apply(kept, mom, d1, 2, 0.5, 0.5, nesterov);
    outer_apply(kept, mom, d2, 2, 0.5, 0.5, nesterov);
    EXPECT(kept[0] == want[0] && kept[1] == want[1], "nesterov %d: kept after two steps %.9g %.9g, by hand %.9g %.9g",
           nesterov, (double)kept[0], (double)kept[1], (double)want[0], (double)want[1]);
    /* the momentum after two steps: mu d1 + d2 either way */
    EXPECT(mom[0] == 0.625f && mom[1] == 0.0f, "nesterov %d: momentum %.9g %.9g, by hand 0.625 0", nesterov,
           (double)mom[0], (double)mom[1]);
}

int main(void) {
    /* element 0, nesterov: b = 0.25, step 0.25 + 0.125 = 0.375, p = 1 - 0.1875 = 0.8125; b = 0.125 + 0.5 =
       0.625, step 0.5 + 0.3125 = 0.8125, p = 0.8125 - 0.40625 = 0.40625.
       element 1: b = -0.125, step -0.1875, p = -0.5 + 0.09375 = -0.40625; b = -0.0625 + 0.0625 = 0, step
       0.0625, p = -0.40625 - 0.03125 = -0.4375 */
    two_steps(true, (const real[]){0.40625f, -0.4375f});
    /* without nesterov the step is b: element 0 p = 1 - 0.125 = 0.875, then 0.875 - 0.3125 = 0.5625;
       element 1 p = -0.5 + 0.0625 = -0.4375, then b = 0: stays -0.4375 */
    two_steps(false, (const real[]){0.5625f, -0.4375f});
    /* lr 1, momentum 0: kept - (kept - mean) = the mean of the ranks' parameters, here 2 ranks at 0.75 and
       0.25 from kept 1: Δ = 1 - 0.5 = 0.5 */
    real kept = 1.0f, mom = 0, delta = 0.5f;
    outer_apply(&kept, &mom, &delta, 1, 1.0, 0.0, true);
    EXPECT(kept == 0.5f, "lr 1, momentum 0: kept %.9g is the ranks' mean 0.5", (double)kept);
    return test_failures ? 1 : 0;
}
